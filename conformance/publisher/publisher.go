package publisher

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

func userText(text string) map[string]any {
	return map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}
}

func mcpGet(ctx context.Context, name string, args any) []map[string]any {
	GinkgoHelper()
	var out struct {
		Messages []map[string]any `json:"messages"`
	}
	Expect(json.Unmarshal(call(ctx, "prompts::mcp-get", map[string]any{"name": name, "arguments": args}), &out)).To(Succeed())
	return out.Messages
}

var _ = group.Describe("publisher SDK (DRIVER.md)", func() {
	It("identifies itself", func(ctx SpecContext) {
		d := driver(target.URL)
		var hello map[string]any
		Expect(json.Unmarshal(do(ctx, d, "hello", nil), &hello)).To(Succeed())
		if sdk != "" {
			Expect(hello).To(HaveKeyWithValue("sdk", sdk))
		} else {
			Expect(hello).To(HaveKeyWithValue("sdk", And(BeAssignableToTypeOf(""), Not(BeEmpty()))))
		}
		Expect(hello).To(HaveKeyWithValue("version", Not(BeEmpty())))
	})

	It("publishes skills, sections and prompts that resolve through the registry", func(ctx SpecContext) {
		d := driver(target.URL)
		id, child := scoped("pub"), scoped("pub")+"/child"
		do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# pub\n\nPublished by the driver.\n"})
		do(ctx, d, "skill", map[string]any{"skill_id": child, "markdown": "# child\n\nNested.\n"})
		var sec struct {
			URI string `json:"uri"`
		}
		path := scoped("pubsec") + "/status"
		Expect(json.Unmarshal(do(ctx, d, "section", map[string]any{"path": path,
			"output": map[string]any{"content": "# status\n\nall good"}}), &sec)).To(Succeed())
		Expect(sec.URI).To(Equal("iii://fn/" + path))
		send, count, dialogue := scoped("send-email"), scoped("count-words"), scoped("dialogue")
		do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": send})
		do(ctx, d, "prompt", map[string]any{"fixture": "count-words", "name": count})
		do(ctx, d, "prompt", map[string]any{"fixture": "dialogue", "name": dialogue})
		started(ctx, d)

		Expect(readText(ctx, client, "iii://"+id)).To(Equal("# pub\n\nPublished by the driver.\n"))
		Expect(readText(ctx, client, "iii://"+child)).To(Equal("# child\n\nNested.\n"))
		Expect(readText(ctx, client, sec.URI)).To(Equal("# status\n\nall good"))
		var fetched string
		Expect(json.Unmarshal(call(ctx, "skill::fetch", map[string]any{"uris": []string{"iii://" + id, sec.URI}}), &fetched)).To(Succeed())
		Expect(fetched).To(Equal("# iii://" + id + "\n\n# pub\n\nPublished by the driver.\n\n---\n\n# " + sec.URI + "\n\n# status\n\nall good"))

		Expect(mcpGet(ctx, send, map[string]any{"to": "alice@example.com", "subject": "Hi"})).
			To(Equal([]map[string]any{userText(`Compose an email to alice@example.com with the subject "Hi".`)}))
		Expect(mcpGet(ctx, send, map[string]any{"to": "bob@example.com", "subject": "Now", "urgent": true})).
			To(Equal([]map[string]any{userText(`Compose an email to bob@example.com with the subject "Now". Mark it urgent.`)}))
		Expect(mcpGet(ctx, count, map[string]any{"limit": 5})).To(Equal([]map[string]any{userText("Use at most 5 words.")}))
		Expect(mcpGet(ctx, dialogue, nil)).To(Equal([]map[string]any{userText("hi"),
			{"role": "assistant", "content": map[string]any{"type": "text", "text": "hello"}}}))

		var listed struct {
			Prompts []struct {
				Name      string           `json:"name"`
				Arguments []map[string]any `json:"arguments"`
			} `json:"prompts"`
		}
		Expect(json.Unmarshal(call(ctx, "prompts::mcp-list", map[string]any{}), &listed)).To(Succeed())
		args := map[string][]map[string]any{}
		for _, p := range listed.Prompts {
			args[p.Name] = p.Arguments
		}
		Expect(args).To(HaveKeyWithValue(send, []map[string]any{
			{"name": "to", "description": "Recipient address", "required": true},
			{"name": "subject", "description": "Subject line", "required": true},
			{"name": "urgent", "description": "Mark as urgent", "required": false},
		}))
		Expect(args).To(HaveKeyWithValue(count, []map[string]any{{"name": "limit", "description": "Maximum words", "required": true}}))
		Expect(args).To(HaveKeyWithValue(dialogue, BeEmpty()))
	})

	It("refuses invalid ids and names with the registry's messages", func(ctx SpecContext) {
		d := driver(target.URL)
		refused(ctx, d, "skill", map[string]any{"skill_id": "Bad-Id", "markdown": "# x\n"},
			`invalid id (segment 1 of "Bad-Id"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Bad-Id"`)
		refused(ctx, d, "skill", map[string]any{"skill_id": "fn/x", "markdown": "# x\n"},
			`id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/x"`)
		refused(ctx, d, "skill", map[string]any{"skill_id": scoped("empty"), "markdown": ""}, "skill must be non-empty")
		refused(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": "Bad Name"},
			`name may only contain lowercase ASCII letters, digits, '-' and '_': "Bad Name"`)
		refused(ctx, d, "section", map[string]any{"path": "Bad/Path", "output": "x"}, "lowercase")
		// The skill and function ids are skill_id / function_id (DRIVER.md); without them the
		// driver names the argument it expected.
		refused(ctx, d, "skill", map[string]any{"markdown": "# x\n"}, `"skill_id"`)
		refused(ctx, d, "function", map[string]any{"fixture": "echo"}, `"function_id"`)
	})

	It("rejects a prompt call with a missing or mistyped argument, naming the argument", func(ctx SpecContext) {
		d := driver(target.URL)
		send, count := scoped("send-email"), scoped("count-words")
		do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": send})
		do(ctx, d, "prompt", map[string]any{"fixture": "count-words", "name": count})
		started(ctx, d)
		_, err := client.Call(ctx, "prompts::mcp-get", map[string]any{"name": send, "arguments": map[string]any{"subject": "Hi"}})
		Expect(err).To(MatchError(ContainSubstring("to")))
		Expect(err.Error()).To(ContainSubstring("trigger "))
		_, err = client.Call(ctx, "prompts::mcp-get", map[string]any{"name": count, "arguments": map[string]any{"limit": "many"}})
		Expect(err).To(MatchError(ContainSubstring("limit")))
	})

	It("publishes typed functions with request and response JSON Schemas", func(ctx SpecContext) {
		d := driver(target.URL)
		fid := "bdd::" + scoped("echo")
		do(ctx, d, "function", map[string]any{"fixture": "echo", "function_id": fid})
		started(ctx, d)
		Eventually(func() ([]string, error) { return client.FunctionIDs(ctx) }).WithTimeout(10 * time.Second).
			Should(ContainElement(fid))
		var info struct {
			Request  map[string]any `json:"request_schema"`
			Response map[string]any `json:"response_schema"`
		}
		Expect(json.Unmarshal(call(ctx, iii.FnInfoFunctions, map[string]any{"function_id": fid}), &info)).To(Succeed())
		Expect(info.Request).To(HaveKeyWithValue("type", "object"))
		Expect(info.Request).To(HaveKeyWithValue("properties", And(HaveKey("message"), HaveKey("repeat"))))
		Expect(info.Request).To(HaveKeyWithValue("required", ConsistOf("message", "repeat")))
		Expect(info.Response).To(HaveKeyWithValue("type", "object"))
		Expect(info.Response).To(HaveKeyWithValue("properties", HaveKey("echo")))
		Expect(info.Response).To(HaveKeyWithValue("required", ConsistOf("echo")))
		Expect(string(call(ctx, fid, map[string]any{"message": "ab", "repeat": 3}))).To(MatchJSON(`{"echo":"ababab"}`))
	})

	It("delivers skills and prompts change events with exact payloads", func(ctx SpecContext) {
		d := driver(target.URL)
		do(ctx, d, "subscribe", map[string]any{"kind": "skills"})
		do(ctx, d, "subscribe", map[string]any{"kind": "prompts"})
		do(ctx, d, "skill", map[string]any{"skill_id": scoped("own"), "markdown": "# own\n"})
		started(ctx, d)
		id, name := scoped("ext"), scoped("ext")
		Eventually(func(g Gomega) {
			_, err := client.Call(ctx, "skills::register", map[string]string{"id": id, "skill": "# ext\n"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.EventsNamed("skill_change")).To(ContainElement(HaveKeyWithValue("id", id)))
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		call(ctx, "skills::unregister", map[string]string{"id": id})
		Eventually(func(g Gomega) {
			_, err := client.Call(ctx, "prompts::register", map[string]any{"name": name, "description": "ext", "function_id": "bdd::ext"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.EventsNamed("prompt_change")).To(ContainElement(HaveKeyWithValue("name", name)))
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		call(ctx, "prompts::unregister", map[string]string{"name": name})
		Eventually(func() []map[string]any { return d.EventsNamed("skill_change") }).WithTimeout(5 * time.Second).
			Should(ContainElement(Equal(map[string]any{"event": "skill_change", "op": "unregister", "id": id})))
		Eventually(func() []map[string]any { return d.EventsNamed("prompt_change") }).WithTimeout(5 * time.Second).
			Should(ContainElement(Equal(map[string]any{"event": "prompt_change", "op": "unregister", "name": name})))
		for _, ev := range d.EventsNamed("skill_change") {
			Expect(ev).To(HaveLen(3))
			Expect(ev).To(HaveKeyWithValue("op", BeElementOf("register", "unregister")))
			Expect(ev).To(HaveKeyWithValue("id", BeAssignableToTypeOf("")))
		}
		for _, ev := range d.EventsNamed("prompt_change") {
			Expect(ev).To(HaveLen(3))
			Expect(ev).To(HaveKeyWithValue("op", BeElementOf("register", "unregister")))
			Expect(ev).To(HaveKeyWithValue("name", BeAssignableToTypeOf("")))
		}
	})

	It("gives up at the deadline with a warning when there is no engine", func(ctx SpecContext) {
		port, err := harness.FreePort()
		Expect(err).NotTo(HaveOccurred())
		d := driver(fmt.Sprintf("ws://127.0.0.1:%d", port))
		do(ctx, d, "configure", map[string]any{"backoff": map[string]any{"initial_ms": 50, "multiplier": 2, "max_ms": 200, "give_up_ms": 1500}})
		do(ctx, d, "skill", map[string]any{"skill_id": scoped("lonely"), "markdown": "# lonely\n"})
		Expect(string(do(ctx, d, "start", map[string]any{"wait": true}))).To(MatchJSON(`{"registered":false,"rejected":[]}`))
		Eventually(func() []map[string]any { return d.EventsNamed("gave_up") }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		Expect(d.EventsNamed("log")).To(ContainElement(And(HaveKeyWithValue("level", "warn"),
			HaveKeyWithValue("message", "skills handshake gave up; install / start it and restart this worker"))))
		Expect(d.EventsNamed("registered")).To(BeEmpty())
	})

	It("fails start at once, naming the address, when the engine URL is malformed", func(ctx SpecContext) {
		d := driver("ws://engine:99999")
		do(ctx, d, "configure", map[string]any{"backoff": map[string]any{"give_up_ms": 600000}})
		// A retry loop would not answer before the deadline above; the
		// address error comes at once (a minute is only the bound of a hang).
		wait, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := d.Do(wait, "start", map[string]any{"wait": true})
		var de *harness.DriverError
		Expect(err).To(BeAssignableToTypeOf(de), "start should reply ok:false at once, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`invalid engine URL "ws://engine:99999" (from III_URL): ` +
			`the port is not a number from 1 to 65535; expected ws://host:port or wss://host:port`))
		Expect(d.EventsNamed("registered")).To(BeEmpty())
	})

	Describe("ids another worker holds", func() {
		BeforeEach(requireLaunched) // FORBIDDEN is our registry's ownership rule

		It("registers past a held id, reports it with its holder and advice, and takes it once the holder is gone", func(ctx SpecContext) {
			shared, first, after := scoped("shared"), scoped("first"), scoped("after")
			holder := driver(target.URL)
			do(ctx, holder, "skill", map[string]any{"skill_id": shared, "markdown": "# held\n"})
			started(ctx, holder)

			d := driver(target.URL)
			do(ctx, d, "configure", map[string]any{"backoff": map[string]any{"initial_ms": 100, "multiplier": 2, "max_ms": 500, "give_up_ms": 120000}})
			for _, id := range []string{first, shared, after} {
				do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# " + id + "\n"})
			}
			var res struct {
				Registered bool `json:"registered"`
				Rejected   []struct {
					Kind, Name, Code, Message, Advice string
					Retried                           bool
					Holder                            *struct {
						WorkerID   string `json:"worker_id"`
						WorkerName string `json:"worker_name"`
					}
				} `json:"rejected"`
			}
			Expect(json.Unmarshal(do(ctx, d, "start", map[string]any{"wait": true}), &res)).To(Succeed())
			Expect(res.Registered).To(BeFalse())
			Expect(res.Rejected).To(HaveLen(1))
			r := res.Rejected[0]
			Expect([]any{r.Kind, r.Name, r.Code, r.Retried}).To(Equal([]any{"skill", shared, "FORBIDDEN", true}))
			Expect(r.Holder).NotTo(BeNil())
			// The holder by the name the engine lists (the registry's web page shows the same).
			var workers struct {
				Workers []iii.WorkerInfo `json:"workers"`
			}
			Expect(json.Unmarshal(call(ctx, iii.FnListWorkers, map[string]any{}), &workers)).To(Succeed())
			name := ""
			for _, w := range workers.Workers {
				if w.StringID() == r.Holder.WorkerID {
					name = w.StringName()
				}
			}
			Expect(name).NotTo(BeEmpty(), "the holder %s is not a listed worker", r.Holder.WorkerID)
			Expect(r.Holder.WorkerName).To(Equal(name))
			quoted, _ := json.Marshal(name)
			Expect(r.Message).To(ContainSubstring("belongs to another worker (" + r.Holder.WorkerID + ", named " + string(quoted) + ")"))
			advice := "stop worker " + string(quoted) + " (" + r.Holder.WorkerID + "), which holds it, or publish under another id; " +
				"this worker retries until its registration deadline"
			Expect(r.Advice).To(Equal(advice))
			line := `skills registry refused skill "` + shared + `" (FORBIDDEN): ` + r.Message + "; " + advice
			Expect(d.EventsNamed("log")).To(ContainElement(And(HaveKeyWithValue("level", "warn"), HaveKeyWithValue("message", line))))
			// Every other item was registered; the held one still reads the holder's.
			Expect(readText(ctx, client, "iii://"+first)).To(Equal("# " + first + "\n"))
			Expect(readText(ctx, client, "iii://"+after)).To(Equal("# " + after + "\n"))
			Expect(readText(ctx, client, "iii://"+shared)).To(Equal("# held\n"))
			Expect(d.EventsNamed("registered")).To(BeEmpty())

			// The holder leaves: the retried id passes to this publisher.
			Expect(holder.Close()).To(Succeed())
			Eventually(func() []map[string]any { return d.EventsNamed("registered") }).WithTimeout(60 * time.Second).ShouldNot(BeEmpty())
			Expect(readText(ctx, client, "iii://"+shared)).To(Equal("# " + shared + "\n"))
			Expect(d.EventsNamed("gave_up")).To(BeEmpty())
		})
	})

	Describe("lifecycle against instances the suite starts", Label("binary"), func() {
		BeforeEach(requireLaunched)

		start := func(ctx context.Context, name string, port int) *harness.Server {
			GinkgoHelper()
			srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: target.Bin, Dir: scratch, Name: name + "-" + u, Port: port})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(srv.Stop)
			return srv
		}
		dial := func(ctx context.Context, url string) *harness.Client {
			GinkgoHelper()
			c, err := harness.Dial(ctx, url, "skills-conformance")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(c.Close)
			return c
		}

		It("keeps retrying until the engine and registry come up", func(ctx SpecContext) {
			port, err := harness.FreePort()
			Expect(err).NotTo(HaveOccurred())
			d := driver(fmt.Sprintf("ws://127.0.0.1:%d", port))
			do(ctx, d, "configure", map[string]any{"backoff": map[string]any{"initial_ms": 100, "multiplier": 2, "max_ms": 500, "give_up_ms": 120000}})
			id := scoped("late")
			do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# late\n"})
			do(ctx, d, "start", map[string]any{"wait": false})
			Consistently(func() []map[string]any { return d.EventsNamed("registered") }).WithTimeout(time.Second).Should(BeEmpty())
			srv := start(ctx, "late", port)
			c := dial(ctx, srv.URL)
			Eventually(func() []map[string]any { return d.EventsNamed("registered") }).WithTimeout(60 * time.Second).ShouldNot(BeEmpty())
			Expect(readText(ctx, c, "iii://"+id)).To(Equal("# late\n"))
			Expect(d.EventsNamed("gave_up")).To(BeEmpty())
		})

		It("re-registers everything after the engine restarts with an empty data directory", func(ctx SpecContext) {
			port, err := harness.FreePort()
			Expect(err).NotTo(HaveOccurred())
			first := start(ctx, "first", port)
			d := driver(first.URL)
			do(ctx, d, "configure", map[string]any{"backoff": map[string]any{"initial_ms": 100, "multiplier": 2, "max_ms": 500, "give_up_ms": 120000}})
			id, send := scoped("again"), scoped("send-email")
			do(ctx, d, "skill", map[string]any{"skill_id": id, "markdown": "# again\n"})
			do(ctx, d, "prompt", map[string]any{"fixture": "send-email", "name": send})
			started(ctx, d)
			rounds := len(d.EventsNamed("registered"))
			first.Stop()
			second := start(ctx, "second", port)
			c := dial(ctx, second.URL)
			Eventually(func() int { return len(d.EventsNamed("registered")) }).WithTimeout(60 * time.Second).Should(BeNumerically(">", rounds))
			Expect(readText(ctx, c, "iii://"+id)).To(Equal("# again\n"))
			var out struct {
				Messages []map[string]any `json:"messages"`
			}
			Expect(c.CallInto(ctx, "prompts::mcp-get", map[string]any{"name": send,
				"arguments": map[string]any{"to": "a@b.c", "subject": "S"}}, &out)).To(Succeed())
			Expect(out.Messages).To(Equal([]map[string]any{userText(`Compose an email to a@b.c with the subject "S".`)}))
		})
	})
})
