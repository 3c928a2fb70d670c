package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

// instance starts one more `skills --standalone` for the current spec and
// connects a client to it.
func instance(ctx context.Context, name string, config []byte, args ...string) *harness.Client {
	GinkgoHelper()
	srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: target.Bin, Dir: scratch,
		Name: name + "-" + u, Config: config, Args: args})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Stop)
	c, err := harness.Dial(ctx, srv.URL, "skills-conformance")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

// storedIn reports which of the given scopes of c hold key.
func storedIn(ctx context.Context, c *harness.Client, key string, scopes ...string) []string {
	GinkgoHelper()
	var in []string
	for _, scope := range scopes {
		keys, err := c.StateKeys(ctx, scope)
		Expect(err).NotTo(HaveOccurred())
		if slices.Contains(keys, key) {
			in = append(in, scope)
		}
	}
	return in
}

var _ = group.Describe("the skills binary (checklist J15, J17, strict fetch)", Label("binary", "extra"), func() {
	BeforeEach(requireLaunched)

	It("J15 --manifest prints the module manifest and exits without connecting", Label("J15"), func(ctx SpecContext) {
		port, err := harness.FreePort()
		Expect(err).NotTo(HaveOccurred())
		stdout, stderr, err := harness.RunBinary(ctx, target.Bin, "--manifest", "--url", fmt.Sprintf("ws://127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
		var m map[string]any
		Expect(json.Unmarshal([]byte(stdout), &m)).To(Succeed(), "stdout: %s", stdout)
		Expect(m).To(HaveKeyWithValue("name", "skills"))
		Expect(m).To(HaveKeyWithValue("version", Not(BeEmpty())))
		Expect(m).To(HaveKeyWithValue("description", "Agentic content registry worker. Hosts skills + prompts + "+
			"the iii:// resource resolver that the mcp worker serves to harnesses."))
		Expect(m).To(HaveKeyWithValue("default_config", map[string]any{
			"scopes": map[string]any{"prompts": "prompts", "skills": "skills"}, "state_timeout_ms": 10000.0}))
		Expect(m).To(HaveKeyWithValue("supported_targets", And(BeAssignableToTypeOf([]any{}), Not(BeEmpty()))))
		Expect(m).To(HaveLen(5))
	})

	DescribeTable("J15 config: scopes come from config.yaml; a missing file means all defaults", Label("J15"),
		func(ctx SpecContext, config string, wantSkills, wantPrompts string) {
			var cfg []byte
			if config != "<missing>" {
				cfg = []byte(config)
			}
			c := instance(ctx, "config", cfg)
			id, name := scoped("cfg-skill"), scoped("cfg-prompt")
			_, err := c.Call(ctx, "skills::register", map[string]string{"id": id, "skill": "# cfg\n"})
			Expect(err).NotTo(HaveOccurred())
			_, err = c.Call(ctx, "prompts::register", map[string]any{"name": name, "description": "cfg", "function_id": "bdd::cfg"})
			Expect(err).NotTo(HaveOccurred())
			scopes := []string{"skills", "prompts", "custom-skills", "custom-prompts"}
			Expect(storedIn(ctx, c, id, scopes...)).To(Equal([]string{wantSkills}))
			Expect(storedIn(ctx, c, name, scopes...)).To(Equal([]string{wantPrompts}))
			var listed struct {
				Skills []struct {
					ID string `json:"id"`
				} `json:"skills"`
			}
			Expect(c.CallInto(ctx, "skills::list", map[string]any{}, &listed)).To(Succeed())
			Expect(listed.Skills).To(ContainElement(HaveField("ID", id)))
		},
		Entry("custom scopes", "scopes:\n  skills: custom-skills\n  prompts: custom-prompts\n", "custom-skills", "custom-prompts"),
		Entry("partial file: defaults for the missing keys", "scopes:\n  skills: custom-skills\n", "custom-skills", "prompts"),
		Entry("missing file", "<missing>", "skills", "prompts"),
	)

	// Upstream v0.2.2 ignores unknown keys and runs on the defaults after a
	// bad file; this server refuses to start instead, naming the problem
	// (the config loader refuses unknown keys), so a typo never silently changes what it serves.
	DescribeTable("J15 config: a bad config file stops the start and names the problem", Label("J15"),
		func(ctx SpecContext, config, want string) {
			srv, err := harness.StartServer(ctx, harness.ServerOptions{Bin: target.Bin, Dir: scratch,
				Name: fmt.Sprintf("badconfig-%s-%d", u, CurrentSpecReport().LeafNodeLocation.LineNumber), Config: []byte(config)})
			if srv != nil {
				srv.Stop()
			}
			Expect(err).To(MatchError(And(ContainSubstring("did not come up"), ContainSubstring(want))))
		},
		Entry("an unknown key, with the key meant", "scopes:\n  skills: custom-skills\nskill_folder: ./skills\n",
			"config.yaml:3: unknown key skill_folder; did you mean skills_folder?"),
		Entry("malformed YAML", "scopes: [unclosed\n  skills: custom-skills\n", "is not valid YAML: line"),
		Entry("a wrongly typed field", "scopes:\n  skills: custom-skills\nstate_timeout_ms: \"x\"\n", "line 3: cannot unmarshal"),
		Entry("the iii engine's own config", "workers:\n  - name: iii-state\n", "this looks like the iii engine's config"),
	)

	It("J17 section and prompt handlers time out after state_timeout_ms", Label("J17"), func(ctx SpecContext) {
		c := instance(ctx, "timeout", []byte("state_timeout_ms: 300\n"))
		slow := func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
			return "late", nil
		}
		section, handler := fnID("slow-section"), fnID("slow-prompt")
		for _, id := range []string{section, handler} {
			undo, err := c.Provide(ctx, id, slow)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(undo)
		}
		_, err := c.Call(ctx, "skills::resources-read", map[string]string{"uri": sectionURI(section)})
		Expect(err).To(MatchError(And(ContainSubstring("trigger "+section), ContainSubstring("invocation timed out"))))
		_, err = c.Call(ctx, "prompts::register", map[string]any{"name": scoped("slow"), "description": "slow", "function_id": handler})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Call(ctx, "prompts::mcp-get", map[string]any{"name": scoped("slow")})
		Expect(err).To(MatchError(And(ContainSubstring("trigger "+handler), ContainSubstring("invocation timed out"))))
	})

	It("J12 --strict-fetch rejects bare paths exactly like upstream v0.2.2", Label("J12"), func(ctx SpecContext) {
		c := instance(ctx, "strict", nil, "--strict-fetch")
		_, err := c.Call(ctx, "skills::register", map[string]string{"id": "agent-memory", "skill": "# agent memory\n"})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Call(ctx, "skill::fetch", map[string]any{"uri": "agent-memory"})
		Expect(err).To(MatchError(ContainSubstring("Invalid URI (must start with iii://): agent-memory")))
		_, err = c.Call(ctx, "skill::fetch", map[string]any{"uris": []string{"iii://agent-memory", "ftp://x"}})
		Expect(err).To(MatchError(ContainSubstring("Invalid URI (must start with iii://): ftp://x")))
		raw, err := c.Call(ctx, "skill::fetch", map[string]any{"uri": "iii://agent-memory"})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(MatchJSON(`"# iii://agent-memory\n\n# agent memory"`))
	})
})
