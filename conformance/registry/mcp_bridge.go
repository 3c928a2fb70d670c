package registry

import (
	"context"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/iii-skills/skills/conformance/harness"
)

var _ = group.Describe("MCP bridge surface (checklist I)", Label("mcp_bridge"), func() {
	var skill, promptName string

	BeforeEach(func(ctx SpecContext) {
		skill, promptName = scoped("bridge"), scoped("bridge-prompt")
		registerSkill(ctx, skill, "# bridge\n\nbody content\n")
		fid := fnID("bridge-prompt")
		provide(ctx, fid, harness.Returning(map[string]any{"content": "bridge body"}))
		registerPrompt(ctx, promptName, "bdd bridge", fid, req("to"))
	})

	It("I1 resources-list has the index and the seeded skill", func(ctx SpecContext) {
		var out struct {
			Resources []map[string]any `json:"resources"`
		}
		callInto(ctx, "skills::resources-list", map[string]any{}, &out)
		Expect(out.Resources).To(ContainElement(HaveKeyWithValue("uri", "iii://skills")))
		Expect(out.Resources).To(ContainElement(HaveKeyWithValue("uri", "iii://"+skill)))
	})

	It("I2 resources-read of the seeded skill", func(ctx SpecContext) {
		c := read(ctx, "iii://"+skill)
		Expect(c.MimeType).To(Equal("text/markdown"))
		Expect(c.Text).To(ContainSubstring("body content"))
	})

	It("I3 prompts::mcp-list has the prompt with its argument", func(ctx SpecContext) {
		var out struct {
			Prompts []struct {
				Name        string           `json:"name"`
				Description string           `json:"description"`
				Arguments   []map[string]any `json:"arguments"`
			} `json:"prompts"`
		}
		callInto(ctx, "prompts::mcp-list", map[string]any{}, &out)
		found := false
		for _, p := range out.Prompts {
			if p.Name != promptName {
				continue
			}
			found = true
			Expect(p.Description).To(Equal("bdd bridge"))
			Expect(p.Arguments).To(HaveLen(1))
			Expect(p.Arguments[0]).To(HaveKeyWithValue("name", "to"))
			Expect(p.Arguments[0]).To(HaveKeyWithValue("required", true))
		}
		Expect(found).To(BeTrue(), "prompt %s not in mcp-list", promptName)
	})

	It("I4 prompts::mcp-get renders the prompt", func(ctx SpecContext) {
		desc, msgs := mcpGet(ctx, map[string]any{"name": promptName, "arguments": map[string]any{"to": "alice@example.com"}})
		Expect(desc).To(Equal("bdd bridge"))
		Expect(msgs).To(HaveLen(1))
		Expect(msgs[0]).To(HaveKeyWithValue("role", "user"))
		Expect(msgs[0]).To(Equal(userText("bridge body")))
	})

	It("I5 engine::functions::list has the public skill::fetch alias and the hidden canonical id", func(ctx SpecContext) {
		fns := functionsByID(ctx)
		Expect(fns).To(HaveKey("skill::fetch"))
		Expect(fns["skill::fetch"].Description).NotTo(BeEmpty())
		Expect(fns).To(HaveKey("skills::fetch_skill"))
		Expect(isHardFloored("skill::fetch")).To(BeFalse())
		Expect(isHardFloored("skills::fetch_skill")).To(BeTrue())
	})

	It("extra: all 13 registry functions are listed with the v0.2.2 fetch description", Label("extra"), func(ctx SpecContext) {
		fns := functionsByID(ctx)
		for _, id := range []string{"skills::register", "skills::unregister", "skills::list", "skills::resources-list",
			"skills::resources-read", "skills::resources-templates", "skills::fetch_skill", "skill::fetch",
			"prompts::register", "prompts::unregister", "prompts::list", "prompts::mcp-list", "prompts::mcp-get"} {
			Expect(fns).To(HaveKey(id))
		}
		want := "Fetches the content of one or more skill resources identified by iii:// URIs. When you encounter " +
			"iii:// links in skill instructions, use this tool to retrieve their contents (batch with `uris` when helpful)."
		Expect(fns["skill::fetch"].Description).To(Equal(want))
		Expect(fns["skills::fetch_skill"].Description).To(Equal(want))
		Expect(fns["skills::register"].Description).To(Equal(
			"Register a markdown skill so it appears as iii://{id} in resources/list."))
		Expect(fns["prompts::register"].Description).To(Equal(
			"Register a slash-command prompt; clients call prompts/get to render it."))
	})
})

// hardFloor is the bridge's always-hidden prefix list (docs/reference/skills-worker.md §1.0).
var hardFloor = []string{"engine::", "state::", "stream::", "iii.", "iii::", "mcp::", "a2a::", "skills::", "prompts::"}

func isHardFloored(id string) bool {
	for _, p := range hardFloor {
		if len(id) >= len(p) && id[:len(p)] == p {
			return true
		}
	}
	return false
}

// functionsByID returns engine::functions::list entries keyed by function_id.
func functionsByID(ctx context.Context) map[string]iii.FunctionInfo {
	GinkgoHelper()
	var out struct {
		Functions []iii.FunctionInfo `json:"functions"`
	}
	callInto(ctx, iii.FnListFunctions, map[string]any{}, &out)
	fns := map[string]iii.FunctionInfo{}
	for _, f := range out.Functions {
		if f.FunctionID != "" {
			fns[f.FunctionID] = f
		}
	}
	return fns
}
