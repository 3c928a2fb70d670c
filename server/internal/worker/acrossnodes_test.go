package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/reach/reachtest"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// namedByEngine names each node by its engine's URL, as the skills binary
// does.
func namedByEngine(s *stack, o *Options) { o.EngineURL = s.engine.URL() }

// A prompt and a section published through node a, read through node b:
// without a bridge b names a as the holder and says what is missing; with
// b's engine bridged to a's, b renders them through the bridge; once the
// publisher is gone, both nodes say no node has the handler.
func TestPromptsAndSectionsAcrossNodes(t *testing.T) {
	a, b := twoNodes(t, true, namedByEngine)
	pub := iii.New(a.engine.URL(), iii.WithName("publisher-on-a"), iii.WithLogger(quiet))
	for id, out := range map[string]string{"pub::greet": "Hello from a", "pub::section": "# Section from a"} {
		out := out
		if _, err := pub.RegisterFunction(id, func(context.Context, json.RawMessage) (any, error) { return out, nil },
			iii.RegisterFunctionOptions{Metadata: iii.InternalMetadata}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	call := func(fn string, in any) error {
		data, _ := json.Marshal(in)
		_, err := pub.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: 10 * time.Second})
		return err
	}
	if err := call(rules.FnPromptsRegister, map[string]string{"name": "across", "description": "d", "function_id": "pub::greet"}); err != nil {
		t.Fatal(err)
	}
	render := func(s *stack) (string, error) {
		var out struct {
			Messages []struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		err := s.call(t, rules.FnPromptsMCPGet, map[string]string{"name": "across"}, &out)
		if err != nil || len(out.Messages) == 0 {
			return "", err
		}
		return out.Messages[0].Content.Text, nil
	}
	section := func(s *stack) (string, error) {
		var out struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		}
		err := s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://fn/pub/section"}, &out)
		if err != nil || len(out.Contents) == 0 {
			return "", err
		}
		return out.Contents[0].Text, nil
	}
	available := func(s *stack) (bool, bool, string) {
		hs, err := s.reg.PromptHandlers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h := hs["across"]
		return h.Available, h.Bridged, h.Problem
	}
	// Each node is named by its host and engine URL: a's URL names it.
	if got, err := render(a); err != nil || got != "Hello from a" {
		t.Fatalf("a renders its own publisher's prompt: %q, %v", got, err)
	}
	testutil.Eventually(t, 10*time.Second, "b knows that a holds the handler", func() bool {
		ok, _, problem := available(b)
		return !ok && strings.Contains(problem, a.engine.URL())
	})
	_, err := render(b)
	t.Logf("b's render without a bridge: %v", err)
	for _, want := range []string{"trigger pub::greet", "function_not_found", a.engine.URL(), "no iii-bridge worker", "docs/deploy.md"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("b's render without a bridge: %v; want it to say %q", err, want)
		}
	}
	_, err = section(b)
	if err == nil || !strings.Contains(err.Error(), a.engine.URL()) || !strings.Contains(err.Error(), rules.CodeNotFound) {
		t.Fatalf("b's section read without a bridge: %v", err)
	}

	closeBridge := reachtest.Bridge(t, b.engine.URL(), a.engine.URL())
	testutil.Eventually(t, 10*time.Second, "b reaches the handler through its bridge", func() bool {
		ok, bridged, _ := available(b)
		return ok && bridged
	})
	if got, err := render(b); err != nil || got != "Hello from a" {
		t.Fatalf("b renders through the bridge: %q, %v", got, err)
	}
	if got, err := section(b); err != nil || got != "# Section from a" {
		t.Fatalf("b reads the section through the bridge: %q, %v", got, err)
	}

	_ = pub.Close()
	for _, s := range []*stack{a, b} {
		testutil.Eventually(t, 10*time.Second, "the handler is seen gone", func() bool {
			ok, _, problem := available(s)
			return !ok && strings.Contains(problem, "no node of this cluster reports it")
		})
	}
	_, err = render(b)
	t.Logf("b's render once the publisher is gone: %v", err)
	if err == nil || !strings.Contains(err.Error(), "no node of this cluster reports it") {
		t.Fatalf("b's render once the publisher is gone: %v", err)
	}
	closeBridge()
}
