package skills

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// The registry-return path: engine::functions-available events re-register
// everything when skills::register appears after having been absent.
func TestFunctionsAvailableReRegistersWhenTheRegistryReturns(t *testing.T) {
	c := iii.RegisterWorker("ws://127.0.0.1:1", iii.WithLogger(slog.New(slog.DiscardHandler)))
	defer c.Close()
	f := &fakeRegistry{}
	registered := make(chan struct{}, 10)
	p := NewPublisher(c, WithLogger(slog.New(slog.DiscardHandler)), WithBackoff(tiny),
		WithOnRegistered(func() { registered <- struct{}{} }))
	p.reg.call = f.call
	if err := p.Skill("a", "# a"); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-registered
	defer p.Close(context.Background(), false)

	event := func(ids ...string) json.RawMessage {
		fns := make([]map[string]string, len(ids))
		for i, id := range ids {
			fns[i] = map[string]string{"function_id": id}
		}
		b, _ := json.Marshal(map[string]any{"event": "functions_changed", "functions": fns})
		return b
	}
	ctx := context.Background()
	// Present from the start: nothing to redo.
	_, _ = p.functionsAvailable(ctx, event("skills::register", "other::x"))
	// Gone, then back: everything is registered again.
	_, _ = p.functionsAvailable(ctx, event("other::x"))
	_, _ = p.functionsAvailable(ctx, event("skills::register"))
	<-registered
	if got := f.got(); len(got) != 2 {
		t.Fatalf("calls %v; want the first registration and one after the registry returned", got)
	}
	// Absence learned from a function_not_found answer counts too.
	p.setRegistry(registryAbsent)
	_, _ = p.functionsAvailable(ctx, event("skills::register"))
	<-registered
	if got := f.got(); len(got) != 3 {
		t.Fatalf("calls %v", got)
	}
}
