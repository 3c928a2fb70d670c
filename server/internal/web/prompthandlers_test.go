package web

import (
	"context"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/core"
)

// handlersOf is a registry that says where its prompts' handlers are, as
// core.Local does (core.Remote cannot tell).
type handlersOf struct {
	core.Registry
	handlers map[string]core.PromptHandler
}

func (h handlersOf) PromptHandlers(context.Context) (map[string]core.PromptHandler, error) {
	return h.handlers, nil
}

// A prompt whose handler cannot be reached is marked on the prompts page
// with the registry's reason; one that can render is not.
func TestPromptsPageMarksPromptsThatCannotRender(t *testing.T) {
	fc := &fakeCaller{answers: map[string]string{
		"prompts::mcp-list": `{"prompts":[{"name":"alive","description":"A."},{"name":"orphan","description":"O."}]}`}}
	reg := handlersOf{Registry: over(fc), handlers: map[string]core.PromptHandler{
		"alive":  {FunctionID: "p::alive", Available: true},
		"orphan": {FunctionID: "p::orphan", Problem: `its handler p::orphan is not registered on this registry's engine; node "h (ws://a)" has it <b>`},
	}}
	s, _ := newServer(t, Options{Registry: reg, Engine: fc}, "")
	page := bodyOf(t, get(t, s, "/prompts", nil))
	if strings.Count(page, "Cannot render now") != 1 {
		t.Fatalf("want exactly one prompt marked:\n%s", page)
	}
	i := strings.Index(page, "Cannot render now")
	if j := strings.Index(page, "/orphan"); j < 0 || j > i || strings.Index(page, "/alive") > j {
		t.Fatalf("the mark is not on the orphan's card:\n%s", page)
	}
	if !strings.Contains(page, `node &#34;h (ws://a)&#34; has it &lt;b&gt;`) {
		t.Fatalf("the reason is not shown (as text):\n%s", page)
	}
}
