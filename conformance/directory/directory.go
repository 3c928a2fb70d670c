package directory

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

// Upstream iii-directory v0.5 strings (docs/reference/directory.md §1), kept
// here verbatim so the suite checks any implementation against them.
var descriptions = map[string]string{
	"directory::skills::list":                      "List filesystem-backed skills (id, body length, modified_at) from skills_folder.",
	"directory::skills::fetch-skill":               "Fetches the content of one or more skill resources. Each entry may be either a full iii:// URI or a bare skill path (the id returned by directory::skills::list, e.g. \"directory/skills/list\") which is auto-prefixed with iii://. Batch with `uris` when helpful.",
	"directory::skills::download":                  "Download skills + prompts into skills_folder. Pass {repo, skill, branch?} to clone a single skill folder from a GitHub repo (git clone --depth 1 --branch <branch>; branch defaults to \"main\"), or {worker, version?|tag?} to pull from the workers registry (defaults to tag=\"latest\" when neither version nor tag is given). Files in the destination namespace are overwritten file-by-file.",
	"directory::prompts::list":                     "List filesystem-backed prompts (name, description, modified_at) from skills_folder.",
	"directory::prompts::get":                      "Fetch one filesystem-backed prompt by name. Returns the raw markdown body plus name, description, and modified_at — no envelope, no templating.",
	"directory::engine::functions::list":           "List every function registered with the engine. Filter by free-text search, namespace prefix, and/or worker name.",
	"directory::engine::functions::info":           "Full detail for one function: schemas, owning worker, registered triggers that target it, and any matching how-to skill from skills_folder.",
	"directory::engine::triggers::list":            "List every trigger TYPE registered with the engine. Filter by search, prefix, worker. (For registered trigger instances, use directory::engine::registered-triggers::list.)",
	"directory::engine::triggers::info":            "Full detail for one trigger type: configuration schema, return schema, owning worker, and current instance count.",
	"directory::engine::registered-triggers::list": "List registered trigger instances (the link rows between trigger types and target functions). Filter by trigger_type, function_id, worker, or free-text search.",
	"directory::engine::registered-triggers::info": "Full denormalized detail for one registered trigger: instance config + trigger-type detail + function detail.",
	"directory::engine::workers::list":             "List every worker currently connected to the engine. Filter by name substring, runtime, or status. Same row shape as directory::registry::workers::list so callers learn one envelope.",
	"directory::engine::workers::info":             "Worker envelope plus the lists of functions, trigger types, and registered triggers it owns. The `worker` field has the same shape as directory::registry::workers::info so callers can switch between local + registry surfaces with the same parser.",
	"directory::registry::workers::list":           "List workers from the public registry (api.workers.iii.dev) matching the free-text term `search`. Same row shape as directory::engine::workers::list so callers learn one envelope. Results are cached for `registry_cache_ttl_ms` (default 60s).",
}

const (
	registryInfoSuffix = "Pass either `version` or `tag` (defaults to tag=\"latest\"). Results are cached for `registry_cache_ttl_ms`."
	indexHeader        = "# Skills\n\nRead each skill's resource for orientation on when and why to call its functions. Sub-skills are indented under their parent path so a top-level skill stays small and the LLM can drill in only when it needs more detail.\n\n"
	emptyIndexLine     = "_No skills are currently available in skills_folder._"
)

func call(fn string, payload any) (json.RawMessage, error) {
	return client.Call(bg, fn, payload)
}

func mustCall(fn string, payload any) json.RawMessage {
	GinkgoHelper()
	raw, err := call(fn, payload)
	Expect(err).NotTo(HaveOccurred(), fn)
	return raw
}

func text(fn string, payload any) string {
	GinkgoHelper()
	var s string
	Expect(json.Unmarshal(mustCall(fn, payload), &s)).To(Succeed())
	return s
}

func fails(fn string, payload any, msg string) {
	GinkgoHelper()
	_, err := call(fn, payload)
	Expect(err).To(HaveOccurred(), fn)
	Expect(err.Error()).To(ContainSubstring(msg))
}

// Codes of the directory's verdicts (ours; not upstream v0.5, which
// answers every failure with invocation_failed): ours keeps upstream's
// message and names the verdict by code, as the registry does.
const (
	invalid = "INVALID_ARGUMENTS" // input the caller got wrong
	missing = "NOT_FOUND"         // something the directory does not hold
	generic = "invocation_failed" // upstream's code for every failure
)

// refuses asserts that fn refuses payload with upstream's message msg and
// with code; from a directory that does not name its verdicts (upstream:
// it lacks our directory::skills::diagnostics), upstream's generic code is
// accepted instead.
func refuses(fn string, payload any, code, msg string) {
	GinkgoHelper()
	_, err := call(fn, payload)
	Expect(err).To(HaveOccurred(), fn)
	Expect(err.Error()).To(ContainSubstring(msg))
	var ie *iii.InvocationError
	Expect(errors.As(err, &ie)).To(BeTrue(), "%s: not an invocation error: %v", fn, err)
	if namesVerdicts() {
		Expect(ie.Code).To(Equal(code), "%s: %v", fn, err)
	} else {
		Expect(ie.Code).To(BeElementOf(code, generic), "%s: %v", fn, err)
	}
}

// namesVerdicts reports whether the directory under test names its
// verdicts by code (asked once).
var namesVerdicts = sync.OnceValue(func() bool {
	ids, err := client.FunctionIDs(bg)
	Expect(err).NotTo(HaveOccurred())
	return slices.Contains(ids, "directory::skills::diagnostics")
})

// write puts a file into the served folder.
func write(rel, content string) {
	GinkgoHelper()
	p := filepath.Join(folder, filepath.FromSlash(rel))
	Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
	Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
}

type skillRow struct {
	ID         string `json:"id"`
	Bytes      int64  `json:"bytes"`
	ModifiedAt string `json:"modified_at"`
}

func listed() map[string]skillRow {
	var out struct {
		Skills []skillRow `json:"skills"`
	}
	Expect(json.Unmarshal(mustCall("directory::skills::list", map[string]any{}), &out)).To(Succeed())
	m := map[string]skillRow{}
	for _, r := range out.Skills {
		m[r.ID] = r
	}
	return m
}

// strip drops the engine's _caller_worker_id from an event payload.
func strip(m map[string]any) map[string]any {
	delete(m, "_caller_worker_id")
	return m
}

// namespace gives a spec its own sub-folder, removed afterwards.
// row decodes fn's answer and returns the object in its list key whose
// field field is value (nil when absent). Comparing decoded rows, not
// text, keeps the spec true on engines that re-encode answers (the iii
// engine re-orders object keys).
func row(fn, key, field, value string) map[string]any {
	var out map[string][]map[string]any
	Expect(json.Unmarshal(mustCall(fn, map[string]any{}), &out)).To(Succeed(), fn)
	for _, r := range out[key] {
		if r[field] == value {
			return r
		}
	}
	return nil
}

func namespace() string {
	ns := "conf-" + harness.UID()
	DeferCleanup(func() { _ = os.RemoveAll(filepath.Join(folder, ns)) })
	return ns
}

var _ = group.Describe("the iii-directory v0.5 surface", func() {
	It("registers the 15 functions with upstream's descriptions and both trigger types", func() {
		var fl struct {
			Functions []struct {
				FunctionID  string          `json:"function_id"`
				Description string          `json:"description"`
				Metadata    json.RawMessage `json:"metadata"`
			} `json:"functions"`
		}
		Expect(json.Unmarshal(mustCall(iii.FnListFunctions, map[string]any{"prefix": "directory::"}), &fl)).To(Succeed())
		got := map[string]string{}
		for _, f := range fl.Functions {
			got[f.FunctionID] = f.Description
			if f.FunctionID == "directory::skills::fetch-skill" {
				Expect(f.Metadata).To(MatchJSON(`{"tool":{"label":"Fetch skill"}}`))
			}
			if f.FunctionID == "directory::skills::download" {
				Expect(f.Metadata).To(MatchJSON(`{"tool":{"label":"Download skills"}}`))
			}
		}
		for id, desc := range descriptions {
			Expect(got).To(HaveKeyWithValue(id, desc))
		}
		Expect(got).To(HaveKey("directory::registry::workers::info"))
		Expect(got["directory::registry::workers::info"]).To(HaveSuffix(registryInfoSuffix))

		var tl struct {
			Triggers []struct {
				ID string `json:"id"`
			} `json:"triggers"`
		}
		Expect(json.Unmarshal(mustCall(iii.FnListTriggers, map[string]any{"prefix": "directory::"}), &tl)).To(Succeed())
		var ids []string
		for _, t := range tl.Triggers {
			ids = append(ids, t.ID)
		}
		Expect(ids).To(ContainElements("directory::skills::on-change", "directory::prompts::on-change"))
	})

	DescribeTable("fetch-skill refuses bad input with upstream's messages",
		func(code string, payload map[string]any, msg string) {
			refuses("directory::skills::fetch-skill", payload, code, msg)
		},
		Entry("nothing", invalid, map[string]any{}, "Provide uri or a non-empty uris array"),
		Entry("blank uris", invalid, map[string]any{"uris": []string{" ", ""}}, "Provide uri or a non-empty uris array"),
		Entry("foreign scheme", invalid, map[string]any{"uri": "https://example.com/x"}, "Invalid URI (must start with iii://): https://example.com/x"),
		Entry("empty id", invalid, map[string]any{"uri": "iii://"}, "Empty resource id: iii://"),
		Entry("index with trailing slash", invalid, map[string]any{"uri": "iii://directory/skills/"}, "Resource URI may not contain empty segments (no leading, trailing, or doubled '/'): iii://directory/skills/"),
		Entry("bare fn", invalid, map[string]any{"uri": "fn"}, "Section URI 'iii://fn' is missing a function path: expected iii://fn/{a}/{b}/...: iii://fn"),
		Entry("bad section segment", invalid, map[string]any{"uri": "iii://fn/A/b"}, `invalid section URI segment "A"`),
		Entry("path escape", invalid, map[string]any{"uri": "../../etc/passwd"}, "invalid id"),
		Entry("absolute path", invalid, map[string]any{"uri": "iii:///etc/passwd"}, "Resource URI may not contain empty segments"),
		Entry("unknown skill", missing, map[string]any{"uri": "no-such-skill-here"}, "Skill not found: no-such-skill-here"),
		Entry("iii://skills is an ordinary id here", missing, map[string]any{"uri": "iii://skills"}, "Skill not found: skills"),
		Entry("section of a missing function", missing, map[string]any{"uri": "iii://fn/conf/no-such-function"}, "trigger conf::no-such-function: "),
	)

	DescribeTable("download classifies its request with upstream's messages",
		func(code, payload string, msg string) {
			refuses("directory::skills::download", json.RawMessage(payload), code, msg)
		},
		Entry("both groups", invalid, `{"repo":"https://x","worker":"w"}`, "specify either {repo, skill, branch?} OR {worker, version?|tag?}, not both"),
		Entry("neither", invalid, `{"repo":"  "}`, "specify either {repo, skill, branch?} OR {worker, version?|tag?}"),
		Entry("branch only", invalid, `{"branch":"dev"}`, "repo is required when skill is set"),
		Entry("repo only", invalid, `{"repo":"https://x"}`, "skill is required when repo is set"),
		Entry("tag only", invalid, `{"tag":"latest"}`, "worker is required when version or tag is set"),
		Entry("version and tag", invalid, `{"worker":"w","version":"1.0.0","tag":"latest"}`, "specify either version OR tag, not both"),
		Entry("bad worker name", invalid, `{"worker":"-w"}`, `worker name must start with a lowercase ASCII letter or digit: "-w"`),
		Entry("skill with a slash", invalid, `{"repo":"https://x","skill":"a/b"}`, `skill name may not contain '/' or '\': "a/b"`),
		Entry("file: repo", invalid, `{"repo":"file:///tmp/x","skill":"a"}`, `repo may not be a file: URL`),
		Entry("worker name chars", invalid, `{"worker":"w!"}`, `worker name may only contain lowercase letters, digits, '-', '_': "w!"`),
		Entry("skill with '..'", invalid, `{"repo":"https://x","skill":"a..b"}`, `skill name may not contain '..': "a..b"`),
		Entry("skill with a space", invalid, `{"repo":"https://x","skill":"a b"}`, `skill name may only contain alphanumerics, '-', '_', '.': "a b"`),
		Entry("hidden skill", invalid, `{"repo":"https://x","skill":".a"}`, `skill name may not start with '.': ".a"`),
		Entry("repo as an option", invalid, `{"repo":"-uhttps://x","skill":"a"}`, `repo may not start with '-': "-uhttps://x"`),
		Entry("ext:: repo", invalid, `{"repo":"ext::sh -c id","skill":"a"}`, `repo may not contain '::': "ext::sh -c id"`),
		Entry("http repo", invalid, `{"repo":"http://x","skill":"a"}`, `repo must start with https://, ssh:// or git@: "http://x"`),
	)

	DescribeTable("the other functions refuse bad input with upstream's messages",
		func(code, fn string, payload map[string]any, msg string) { refuses(fn, payload, code, msg) },
		Entry("prompt name empty", invalid, "directory::prompts::get", map[string]any{"name": ""}, "name must be non-empty"),
		Entry("prompt name long", invalid, "directory::prompts::get", map[string]any{"name": strings.Repeat("p", 65)}, "name too long (65 chars; max 64)"),
		Entry("prompt name chars", invalid, "directory::prompts::get", map[string]any{"name": "../p"}, `name may only contain lowercase ASCII letters, digits, '-' and '_': "../p"`),
		Entry("prompt missing", missing, "directory::prompts::get", map[string]any{"name": "no-such-prompt"}, "Prompt not found: no-such-prompt"),
		Entry("function id empty", invalid, "directory::engine::functions::info", map[string]any{"function_id": " "}, "function_id must be non-empty"),
		Entry("function missing", missing, "directory::engine::functions::info", map[string]any{"function_id": "no::such"}, "function not found: no::such"),
		Entry("trigger type id empty", invalid, "directory::engine::triggers::info", map[string]any{"id": ""}, "id must be non-empty"),
		Entry("trigger type missing", missing, "directory::engine::triggers::info", map[string]any{"id": "no::such"}, "trigger type not found: no::such"),
		Entry("registered trigger id empty", invalid, "directory::engine::registered-triggers::info", map[string]any{"id": ""}, "id must be non-empty"),
		Entry("registered trigger missing", missing, "directory::engine::registered-triggers::info", map[string]any{"id": "nope"}, "registered trigger not found: nope"),
		Entry("worker name empty", invalid, "directory::engine::workers::info", map[string]any{"name": ""}, "name must be non-empty"),
		Entry("worker missing", missing, "directory::engine::workers::info", map[string]any{"name": "no-such-worker"}, "worker not found: no-such-worker"),
		Entry("registry search empty", invalid, "directory::registry::workers::list", map[string]any{"search": " "}, "search must be non-empty"),
		Entry("registry version and tag", invalid, "directory::registry::workers::info", map[string]any{"name": "x", "version": "1", "tag": "t"}, "specify either version OR tag, not both"),
	)

	// Upstream's input struct names are not recorded: only the serde
	// message up to "expected struct " is checked.
	DescribeTable("every function takes an object: serde refuses null and other values",
		func(fn, payload, got string) {
			refuses(fn, json.RawMessage(payload), invalid, "invalid type: "+got+", expected struct ")
		},
		Entry("list, null", "directory::skills::list", "null", "null"),
		Entry("fetch-skill, null", "directory::skills::fetch-skill", "null", "null"),
		Entry("download, a number", "directory::skills::download", "5", "integer `5`"),
		Entry("prompts get, a string", "directory::prompts::get", `"greet"`, `string "greet"`),
		Entry("functions list, a list", "directory::engine::functions::list", "[]", "sequence"),
	)

	It("renders the empty index with upstream's line", func() {
		// Only checkable while the folder serves nothing: every spec
		// removes its sub-folder, and a shared external folder may hold
		// skills of its own.
		deadline := time.Now().Add(5 * time.Second)
		for len(listed()) > 0 {
			if time.Now().After(deadline) {
				Skip("the served folder holds skills")
			}
			time.Sleep(50 * time.Millisecond)
		}
		Expect(text("directory::skills::fetch-skill", map[string]any{"uri": "iii://directory/skills"})).To(Equal(
			"# iii://directory/skills\n\n" + indexHeader + emptyIndexLine))
	})

	It("renders the index with upstream's header and never truncates descriptions", func() {
		ns := namespace()
		long := strings.TrimSpace(strings.Repeat("orientation ", 20)) // 239 characters
		write(ns+"/long.md", "# Long\n\n"+long+"\n")
		Eventually(listed).WithTimeout(5 * time.Second).Should(HaveKey(ns + "/long"))
		index := text("directory::skills::fetch-skill", map[string]any{"uri": "directory/skills"})
		Expect(index).To(HavePrefix("# iii://directory/skills\n\n" + indexHeader))
		Expect(index).To(ContainSubstring("  - [`" + ns + "/long`](iii://" + ns + "/long) — Long — " + long))
		if len(listed()) == 1 {
			Expect(index).NotTo(ContainSubstring(emptyIndexLine))
		}
	})
})

var _ = group.Describe("skills folders", func() {
	It("serves a markdown file by its path id, fresh on every edit", func() {
		ns := namespace()
		write(ns+"/alpha.md", "---\ntitle: ignored\n---\n# Alpha\n\nFirst.\n")
		Eventually(listed).WithTimeout(5 * time.Second).Should(HaveKey(ns + "/alpha"))
		row := listed()[ns+"/alpha"]
		fi, err := os.Stat(filepath.Join(folder, ns, "alpha.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(row.Bytes).To(Equal(fi.Size()))
		Expect(row.ModifiedAt).To(HaveSuffix("+00:00"))
		Expect(text("directory::skills::fetch-skill", map[string]any{"uris": []string{ns + "/alpha", "iii://" + ns + "/alpha"}})).To(Equal(
			"# iii://" + ns + "/alpha\n\n# Alpha\n\nFirst.\n\n---\n\n# iii://" + ns + "/alpha\n\n# Alpha\n\nFirst."))
		write(ns+"/alpha.md", "# Alpha v2\n")
		Eventually(func() string {
			return text("directory::skills::fetch-skill", map[string]any{"uri": ns + "/alpha"})
		}).WithTimeout(5 * time.Second).Should(Equal("# iii://" + ns + "/alpha\n\n# Alpha v2"))
		Expect(os.Remove(filepath.Join(folder, ns, "alpha.md"))).To(Succeed())
		Eventually(listed).WithTimeout(5 * time.Second).ShouldNot(HaveKey(ns + "/alpha"))
	})

	It("serves an Agent Skills folder in the registry surface, marked as a folder skill", func() {
		ns := namespace()
		write(ns+"/pdf-tool/SKILL.md", "---\nname: pdf-tool\ndescription: Work with PDFs.\n---\n# PDF tool\n\nUse scripts/run.py.\n")
		write(ns+"/pdf-tool/scripts/run.py", "print('x')\n")
		id := ns + "/pdf-tool"
		Eventually(listed).WithTimeout(5 * time.Second).Should(HaveKey(id))
		Expect(text("skill::fetch", map[string]any{"uri": "iii://" + id})).To(Equal("# iii://" + id + "\n\n# PDF tool\n\nUse scripts/run.py."))
		Expect(row("skills::list", "skills", "id", id)).To(HaveKeyWithValue("origin", And(
			HaveKeyWithValue("kind", "folder"), HaveKeyWithValue("path", id+"/SKILL.md"))))
		Expect(row("skills::resources-list", "resources", "uri", "iii://"+id)).To(HaveKeyWithValue("origin", "folder"))
		index := text("skills::fetch_skill", map[string]any{"uri": "iii://skills"})
		Expect(index).To(ContainSubstring("[`" + id + "`](iii://" + id + ") — PDF tool — Work with PDFs."))

		// A published skill at the same id wins; unregistering it brings the folder back.
		mustCall("skills::register", map[string]any{"id": id, "skill": "# Published\n"})
		Expect(text("skill::fetch", map[string]any{"uri": "iii://" + id})).To(Equal("# iii://" + id + "\n\n# Published"))
		Expect(row("skills::list", "skills", "id", id)).To(HaveKeyWithValue("shadows", ContainElement(And(
			HaveKeyWithValue("kind", "folder"), HaveKeyWithValue("path", id+"/SKILL.md")))))
		mustCall("skills::unregister", map[string]any{"id": id})
		Expect(text("skill::fetch", map[string]any{"uri": "iii://" + id})).To(ContainSubstring("# PDF tool"))
	})

	It("serves an Agent Skills folder's supporting files over iii and finds it with skills::search", Label("supporting_files", "search"), func() {
		ns := namespace()
		write(ns+"/img-tool/SKILL.md", "---\nname: img-tool\ndescription: Compress and resize images for the web.\n---\n# Image tool\n\nSee [the guide](reference/guide.md).\n")
		write(ns+"/img-tool/reference/guide.md", "# Guide\n\nPrefer WebP.\n")
		write(ns+"/img-tool/assets/logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
		id := ns + "/img-tool"
		Eventually(listed).WithTimeout(5 * time.Second).Should(HaveKey(id))
		file := "iii://" + id + "/reference/guide.md"
		for _, fn := range []string{"skill::fetch", "skills::fetch_skill", "directory::skills::fetch-skill"} {
			Expect(text(fn, map[string]any{"uri": file})).To(Equal("# "+file+"\n\n# Guide\n\nPrefer WebP."), fn)
			binary := text(fn, map[string]any{"uri": "iii://" + id + "/assets/logo.png"})
			Expect(binary).To(ContainSubstring("image/png, 16 bytes"), fn)
			Expect(binary).To(ContainSubstring("skill://"+id+"/assets/logo.png"), fn)
			Expect(binary).NotTo(ContainSubstring("PNG\r"), fn)
		}
		var read struct {
			Contents []struct {
				URI      string `json:"uri"`
				MimeType string `json:"mimeType"`
				Text     string `json:"text"`
			} `json:"contents"`
		}
		Expect(json.Unmarshal(mustCall("skills::resources-read", map[string]any{"uri": file}), &read)).To(Succeed())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(Equal("# Guide\n\nPrefer WebP.\n"))
		Expect(read.Contents[0].MimeType).To(Equal("text/markdown"))
		// A path that is no file of the skill keeps upstream's id error.
		fails("skill::fetch", map[string]any{"uri": "iii://" + id + "/reference/missing.md"}, "segment may only contain")

		if _, err := call("skills::search", map[string]any{"query": "x"}); err != nil && strings.Contains(err.Error(), "function_not_found") {
			Skip("the registry under test has no skills::search")
		}
		Eventually(func() string {
			return string(mustCall("skills::search", map[string]any{"query": "shrink images for the web", "namespace": ns}))
		}).WithTimeout(5 * time.Second).Should(ContainSubstring(`"id":"` + id + `"`))
	})

	It("fires both on-change types when files change", func() {
		ns := namespace()
		uid := harness.UID()
		dirEvents, undo, err := client.Subscribe(bg, "directory::skills::on-change", "conf::dir-sink-"+uid)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(undo)
		regEvents, undo2, err := client.Subscribe(bg, "skills::on-change", "conf::reg-sink-"+uid)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(undo2)
		// Bindings arrive asynchronously: probe until a write is seen.
		id := ns + "/probe"
		Eventually(func() []map[string]any {
			write(ns+"/probe.md", "# Probe "+time.Now().String()+"\n")
			time.Sleep(100 * time.Millisecond)
			return dirEvents.About("id", id)
		}).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		Expect(strip(dirEvents.About("id", id)[0])).To(Equal(map[string]any{"id": id, "op": "put", "path": id + ".md", "source": "watch"}))
		Eventually(func() []map[string]any { return regEvents.About("id", id) }).WithTimeout(5 * time.Second).ShouldNot(BeEmpty())
		Expect(strip(regEvents.About("id", id)[0])).To(Equal(map[string]any{"id": id, "op": "register"}))
		Expect(os.Remove(filepath.Join(folder, ns, "probe.md"))).To(Succeed())
		Eventually(func() []any {
			var ops []any
			for _, m := range dirEvents.About("id", id) {
				ops = append(ops, m["op"])
			}
			return ops
		}).WithTimeout(5 * time.Second).Should(ContainElement("remove"))
		Eventually(func() []any {
			var ops []any
			for _, m := range regEvents.About("id", id) {
				ops = append(ops, m["op"])
			}
			return ops
		}).WithTimeout(5 * time.Second).Should(ContainElement("unregister"))
	})

	It("serves prompts from */prompts/*.md", func() {
		ns := namespace()
		name := "conf-prompt-" + harness.UID()
		write(ns+"/prompts/"+name+".md", "---\ndescription: A conformance prompt\n---\nSay hi.\n")
		Eventually(func() map[string]any {
			return row("directory::prompts::list", "prompts", "name", name)
		}).WithTimeout(5 * time.Second).Should(And(HaveKeyWithValue("description", "A conformance prompt"), HaveKey("modified_at")))
		var p map[string]any
		Expect(json.Unmarshal(mustCall("directory::prompts::get", map[string]any{"name": name}), &p)).To(Succeed())
		Expect(p).To(HaveKeyWithValue("body", "Say hi.\n"))
		Expect(p).To(HaveKeyWithValue("description", "A conformance prompt"))
	})

	It("skips bad files and says why in directory::skills::diagnostics", func() {
		ns := namespace()
		write(ns+"/Bad.md", "# Bad id\n")
		write(ns+"/empty.md", "---\na: 1\n---\n\n")
		write(ns+"/wrong/SKILL.md", "---\nname: other\ndescription: d\n---\nbody\n")
		dup := "conf-dup-" + harness.UID()
		write(ns+"/prompts/nofm.md", "Say hi without frontmatter.\n")
		write(ns+"/a/prompts/dup.md", "---\nname: "+dup+"\ndescription: first\n---\nA\n")
		write(ns+"/b/prompts/dup.md", "---\nname: "+dup+"\ndescription: second\n---\nB\n")
		reasons := func() map[string]string {
			var d struct {
				Skipped []struct {
					Path   string `json:"path"`
					Reason string `json:"reason"`
				} `json:"skipped"`
			}
			Expect(json.Unmarshal(mustCall("directory::skills::diagnostics", map[string]any{}), &d)).To(Succeed())
			m := map[string]string{}
			for _, s := range d.Skipped {
				m[s.Path] = s.Reason
			}
			return m
		}
		Eventually(reasons).WithTimeout(5 * time.Second).Should(HaveKey(ns + "/b/prompts/dup.md"))
		r := reasons()
		Expect(r[ns+"/Bad.md"]).To(HavePrefix(`invalid id "` + ns + `/Bad"`))
		Expect(r[ns+"/empty.md"]).To(Equal("file has empty body"))
		Expect(r[ns+"/wrong/SKILL.md"]).To(Equal(`frontmatter name "other" must equal the folder name "wrong"`))
		Expect(r[ns+"/prompts/nofm.md"]).To(Equal("missing YAML frontmatter (expected --- ... --- block at file start)"))
		Expect(r[ns+"/b/prompts/dup.md"]).To(HavePrefix(`duplicate name "` + dup + `" also produced by `))
		Expect(r[ns+"/b/prompts/dup.md"]).To(ContainSubstring(ns + "/a/prompts/dup.md"))
		Expect(listed()).NotTo(HaveKey(ns + "/empty"))
	})
})
