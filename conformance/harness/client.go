package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Default state scopes of the registry (config.yaml scopes.skills / scopes.prompts).
const (
	SkillsScope  = "skills"
	PromptsScope = "prompts"
)

// CallTimeout bounds every call the suite makes.
const CallTimeout = 30 * time.Second

// Client is the suite's own iii worker connection.
type Client struct {
	*iii.Client
}

// Dial connects a new worker named name to the engine at url.
func Dial(ctx context.Context, url, name string) (*Client, error) {
	c := iii.RegisterWorker(url, iii.WithName(name),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		iii.WithReconnectConfig(iii.ReconnectConfig{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second}))
	if err := c.Connect(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return &Client{c}, nil
}

// Call invokes fn with payload and returns the raw result. A payload of nil
// is sent as {}; send json.RawMessage("null") for a literal null.
func (c *Client) Call(ctx context.Context, fn string, payload any) (json.RawMessage, error) {
	var data json.RawMessage
	if payload != nil {
		var err error
		if data, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("encode the %s payload: %w", fn, err)
		}
	}
	first := retryAfter()
	if first <= 0 || first >= CallTimeout || !repeatable(fn, data) {
		return c.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: CallTimeout})
	}
	out, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: first})
	if err == nil || !errors.Is(err, iii.ErrTimeout) || ctx.Err() != nil {
		return out, err
	}
	// Printed so a run can count them: each is a result the engine dropped.
	fmt.Fprintf(os.Stderr, "conformance: no answer to %s within %s (engine dropped the result?); sending it once more\n", fn, first)
	return c.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: data, Timeout: CallTimeout - first})
}

// repeatable reports whether sending fn twice is invisible to the specs:
// reads, and registrations (the same row is written again). Unregisters
// (the second answers removed:false), prompts::mcp-get and iii://fn reads
// (they run a handler the spec may count) are never re-sent.
func repeatable(fn string, data json.RawMessage) bool {
	switch fn {
	case "skills::list", "prompts::list", "prompts::mcp-list", "skills::resources-list",
		"skills::resources-templates", "skills::register", "prompts::register", iii.StateGet, iii.StateList:
		return true
	case "skills::resources-read", "skill::fetch", "skills::fetch_skill":
		return !strings.Contains(string(data), "iii://fn")
	}
	return strings.HasPrefix(fn, "engine::")
}

// retryAfter is CONFORMANCE_RETRY_AFTER (e.g. 5s): when set, a call with no
// answer by then is sent once more. Only for engines known to drop results:
// the real iii engine 0.22–0.23 records an invocation after sending it and
// drops the answer of a worker faster than that (about 1 in 10 000 calls, far
// more on a loaded machine). Unset, every call waits CallTimeout once.
func retryAfter() time.Duration {
	d, err := time.ParseDuration(os.Getenv("CONFORMANCE_RETRY_AFTER"))
	if err != nil {
		return 0
	}
	return d
}

// CallInto invokes fn and decodes the result into out.
func (c *Client) CallInto(ctx context.Context, fn string, payload, out any) error {
	raw, err := c.Call(ctx, fn, payload)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode result of %s (%s): %w", fn, raw, err)
	}
	return nil
}

// WaitForRegistry polls skills::list until it answers or ctx ends.
func (c *Client) WaitForRegistry(ctx context.Context) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := c.Trigger(attempt, iii.TriggerRequest{FunctionID: "skills::list", Data: json.RawMessage(`{}`), Timeout: 3 * time.Second})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("skills::list never answered: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// UID is 12 random lowercase hex digits.
func UID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Scoped makes a per-spec id the way upstream's harness does:
// "<base>-bdd-<uid>", cut to 64 bytes.
func Scoped(base, uid string) string {
	s := base + "-bdd-" + uid
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// StateEntries extracts the rows of a state::list result. Like upstream it
// accepts a flat array, {items:[{value:…}]} and {value:[…]}.
func StateEntries(raw json.RawMessage) []json.RawMessage {
	var flat []json.RawMessage
	if json.Unmarshal(raw, &flat) == nil {
		return flat
	}
	var items struct {
		Items []struct {
			Value json.RawMessage `json:"value"`
		} `json:"items"`
		Value []json.RawMessage `json:"value"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	if items.Items != nil {
		out := make([]json.RawMessage, 0, len(items.Items))
		for _, it := range items.Items {
			out = append(out, it.Value)
		}
		return out
	}
	return items.Value
}

// StateKeys lists the registry keys stored in scope (each row's id, or name
// for prompts).
func (c *Client) StateKeys(ctx context.Context, scope string) ([]string, error) {
	raw, err := c.Call(ctx, iii.StateList, map[string]string{"scope": scope})
	if err != nil {
		return nil, fmt.Errorf("state::list %s: %w", scope, err)
	}
	var keys []string
	for _, row := range StateEntries(raw) {
		var r struct {
			ID   *string `json:"id"`
			Name *string `json:"name"`
		}
		if json.Unmarshal(row, &r) != nil {
			continue
		}
		switch {
		case r.ID != nil:
			keys = append(keys, *r.ID)
		case r.Name != nil:
			keys = append(keys, *r.Name)
		}
	}
	return keys, nil
}

// CleanRegistry empties the default skills and prompts scopes like
// upstream's harness (state::list, then state::delete of each row's id or
// name), then waits until skills::list and prompts::list no longer show the
// deleted rows, so a registry that caches state has caught up before the
// next spec starts.
func (c *Client) CleanRegistry(ctx context.Context) error {
	var goneSkills, gonePrompts []string
	for _, sc := range []struct {
		scope string
		gone  *[]string
	}{{SkillsScope, &goneSkills}, {PromptsScope, &gonePrompts}} {
		keys, err := c.StateKeys(ctx, sc.scope)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := c.Call(ctx, iii.StateDelete, map[string]string{"scope": sc.scope, "key": k}); err != nil {
				return fmt.Errorf("state::delete %s/%s: %w", sc.scope, k, err)
			}
			*sc.gone = append(*sc.gone, k)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		skills, err := c.listed(ctx, "skills::list", "skills", "id")
		if err != nil {
			return err
		}
		prompts, err := c.listed(ctx, "prompts::list", "prompts", "name")
		if err != nil {
			return err
		}
		left := append(intersect(skills, goneSkills), intersect(prompts, gonePrompts)...)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rows deleted from state are still listed by the registry after 10 s: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Client) listed(ctx context.Context, fn, field, key string) ([]string, error) {
	var out map[string][]map[string]any
	if err := c.CallInto(ctx, fn, map[string]any{}, &out); err != nil {
		return nil, err
	}
	var keys []string
	for _, row := range out[field] {
		if s, ok := row[key].(string); ok {
			keys = append(keys, s)
		}
	}
	return keys, nil
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// FunctionIDs lists the function ids engine::functions::list reports.
func (c *Client) FunctionIDs(ctx context.Context) ([]string, error) {
	var out struct {
		Functions []iii.FunctionInfo `json:"functions"`
	}
	if err := c.CallInto(ctx, iii.FnListFunctions, map[string]any{}, &out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(out.Functions))
	for _, f := range out.Functions {
		ids = append(ids, f.FunctionID)
	}
	return ids, nil
}

// Provide registers a test function on the suite's connection and waits
// until the engine lists it, so the registry can trigger it at once. The
// returned func unregisters it.
func (c *Client) Provide(ctx context.Context, id string, h iii.Handler) (func(), error) {
	ref, err := c.RegisterFunction(id, h)
	if err != nil {
		return nil, err
	}
	undo := func() { _ = ref.Unregister() }
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := c.FunctionIDs(ctx)
		if err == nil && slices.Contains(ids, id) {
			return undo, nil
		}
		if time.Now().After(deadline) {
			undo()
			return nil, fmt.Errorf("function %s not listed by engine::functions::list after 10 s (last error: %v)", id, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Returning is a handler that always returns v (a json.RawMessage is sent verbatim).
func Returning(v any) iii.Handler {
	return func(context.Context, json.RawMessage) (any, error) { return v, nil }
}

// Events records what one on-change subscription received.
type Events struct {
	mu   sync.Mutex
	list []json.RawMessage
}

// Record is the handler of the subscribed function.
func (e *Events) Record(_ context.Context, data json.RawMessage) (any, error) {
	e.mu.Lock()
	e.list = append(e.list, slices.Clone(data))
	e.mu.Unlock()
	return map[string]any{}, nil
}

// All returns the payloads received so far, in arrival order.
func (e *Events) All() []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// Decoded returns the payloads as objects (a non-object payload decodes to nil).
func (e *Events) Decoded() []map[string]any {
	var out []map[string]any
	for _, raw := range e.All() {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		out = append(out, m)
	}
	return out
}

// About returns the payloads whose key field equals value.
func (e *Events) About(key, value string) []map[string]any {
	var out []map[string]any
	for _, m := range e.Decoded() {
		if s, _ := m[key].(string); s == value {
			out = append(out, m)
		}
	}
	return out
}

// Subscribe registers function fnID on the suite's connection and binds it
// to triggerType (skills::on-change or prompts::on-change). Bindings reach
// the provider asynchronously; callers wait for a probe event before relying
// on the subscription. The returned func removes both.
func (c *Client) Subscribe(ctx context.Context, triggerType, fnID string) (*Events, func(), error) {
	ev := &Events{}
	undoFn, err := c.Provide(ctx, fnID, ev.Record)
	if err != nil {
		return nil, nil, err
	}
	tid := "conformance-binding-" + UID()
	if err := c.RegisterTrigger(tid, triggerType, fnID, nil); err != nil {
		undoFn()
		return nil, nil, err
	}
	return ev, func() {
		_ = c.UnregisterTrigger(tid)
		undoFn()
	}, nil
}
