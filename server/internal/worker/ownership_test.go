package worker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
)

// Ownership of ids and scoped tokens, over real sockets: another
// connection's register or unregister of an id is refused and nothing
// stored is lost; a publisher that restarts (new connection, old one gone)
// takes its ids back.

// connectAs opens another worker connection to the stack's engine.
func connectAs(t *testing.T, s *stack, name string, opts ...iii.Option) *iii.Client {
	t.Helper()
	c := iii.RegisterWorker(s.engine.URL(), append([]iii.Option{iii.WithName(name), iii.WithLogger(quiet)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func callAs(c *iii.Client, fn string, payload any, meta json.RawMessage) (json.RawMessage, error) {
	data, _ := json.Marshal(payload)
	return c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: data, Metadata: meta, Timeout: 10 * time.Second})
}

func mustCallAs(t *testing.T, c *iii.Client, fn string, payload any) json.RawMessage {
	t.Helper()
	out, err := callAs(c, fn, payload, nil)
	if err != nil {
		t.Fatalf("%s(%v): %v", fn, payload, err)
	}
	return out
}

// wantForbidden checks an ownership refusal and its message.
func wantForbidden(t *testing.T, err error, contains ...string) {
	t.Helper()
	wantRefusal(t, rules.CodeForbidden, err, contains...)
}

// wantOutOfScope checks a namespace refusal and its message.
func wantOutOfScope(t *testing.T, err error, contains ...string) {
	t.Helper()
	wantRefusal(t, rules.CodeOutOfScope, err, contains...)
}

func wantRefusal(t *testing.T, code string, err error, contains ...string) {
	t.Helper()
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != code {
		t.Fatalf("err = %v; want a %s refusal", err, code)
	}
	for _, s := range contains {
		if !strings.Contains(ie.Message, s) {
			t.Fatalf("refusal %q does not say %q", ie.Message, s)
		}
	}
}

func skillBody(t *testing.T, s *stack, id string) string {
	t.Helper()
	var body string
	s.mustCall(t, rules.FnSkillFetch, map[string]string{"uri": "iii://" + id}, &body)
	return body
}

func TestAnotherWorkerCannotOverwriteOrRemoveASkillOrPrompt(t *testing.T) {
	for _, stamped := range []bool{true, false} {
		name := "caller stamped by the engine"
		if !stamped {
			name = "_caller_worker_id (an engine that does not stamp)"
		}
		t.Run(name, func(t *testing.T) {
			s := startStack(t, "")
			s.worker.SetCallerStamped(stamped)
			owner := connectAs(t, s, "publisher")
			attacker := connectAs(t, s, "attacker")

			mustCallAs(t, owner, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# by the owner"})
			mustCallAs(t, owner, rules.FnPromptsRegister, map[string]any{"name": "team-review", "description": "d", "function_id": "team::render"})

			forged, _ := json.Marshal(map[string]any{"iii_caller": map[string]string{"worker_id": owner.WorkerID()}})
			for _, try := range []struct {
				fn      string
				payload map[string]any
				meta    json.RawMessage
				says    string
			}{
				{rules.FnSkillsRegister, map[string]any{"id": "team/doc", "skill": "# pwned"}, nil, `skill "team/doc" belongs to another worker`},
				{rules.FnSkillsUnregister, map[string]any{"id": "team/doc"}, nil, `skill "team/doc" belongs to another worker`},
				{rules.FnSkillsRegister, map[string]any{"id": "team/doc", "skill": "# pwned", "_caller_worker_id": owner.WorkerID()}, forged, "belongs to another worker"},
				{rules.FnPromptsRegister, map[string]any{"name": "team-review", "description": "x", "function_id": "evil::render"}, nil, `prompt "team-review" belongs to another worker`},
				{rules.FnPromptsUnregister, map[string]any{"name": "team-review", "_caller_worker_id": owner.WorkerID()}, forged, `prompt "team-review" belongs to another worker`},
			} {
				_, err := callAs(attacker, try.fn, try.payload, try.meta)
				// The holder by id and by the name the web page shows.
				wantForbidden(t, err, try.says, "("+owner.WorkerID()+`, named "publisher"); only the worker`)
			}
			if got := skillBody(t, s, "team/doc"); !strings.HasSuffix(got, "\n# by the owner") {
				t.Fatalf("after the attacks the skill reads %q", got)
			}
			var prompts struct {
				Prompts []struct {
					FunctionID string `json:"function_id"`
				} `json:"prompts"`
			}
			s.mustCall(t, rules.FnPromptsList, nil, &prompts)
			if len(prompts.Prompts) != 1 || prompts.Prompts[0].FunctionID != "team::render" {
				t.Fatalf("after the attacks the prompts are %+v", prompts.Prompts)
			}

			// The owner keeps updating its own ids.
			mustCallAs(t, owner, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# v2"})
			// A publisher that restarts comes back on a new connection once
			// the old one is gone, and takes its ids back.
			_ = owner.Close()
			restarted := connectAs(t, s, "publisher")
			for deadline := time.Now().Add(10 * time.Second); ; {
				_, err := callAs(restarted, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# after restart"}, nil)
				if err == nil {
					break
				}
				// The engine may not have cleaned the old connection up yet.
				if time.Now().After(deadline) {
					t.Fatalf("the restarted publisher cannot re-register its skill: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			mustCallAs(t, restarted, rules.FnPromptsRegister, map[string]any{"name": "team-review", "description": "d2", "function_id": "team::render"})
			if got := skillBody(t, s, "team/doc"); !strings.HasSuffix(got, "\n# after restart") {
				t.Fatalf("after the restart the skill reads %q", got)
			}
			// And now the old attacker is refused by the new owner too.
			_, err := callAs(attacker, rules.FnSkillsUnregister, map[string]string{"id": "team/doc"}, nil)
			wantForbidden(t, err, restarted.WorkerID())
			mustCallAs(t, restarted, rules.FnSkillsUnregister, map[string]string{"id": "team/doc"})
			// An id nobody owns is anyone's.
			mustCallAs(t, attacker, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# free again"})
		})
	}
}

func TestScopedTokenPublishesOnlyItsOwnSkillsAndPrompts(t *testing.T) {
	const operator, acmeTok, billingTok = "operator-token-0123", "acme-token-0123456789", "billing-token-012345"
	s := startStackOn(t, engine.Config{Token: operator, ScopedTokens: []engine.ScopedToken{
		{Name: "acme", Token: acmeTok, Namespaces: []string{"acme"}},
		{Name: "billing", Token: billingTok, Namespaces: []string{"billing"}},
	}}, []iii.Option{iii.WithHeaders(http.Header{"Authorization": {"Bearer " + operator}})})
	s.worker.SetCallerStamped(true)
	as := func(tok string) iii.Option { return iii.WithHeaders(http.Header{"Authorization": {"Bearer " + tok}}) }
	acme := connectAs(t, s, "acme-publisher", as(acmeTok))
	acme2 := connectAs(t, s, "acme-publisher-2", as(acmeTok))
	billing := connectAs(t, s, "billing-publisher", as(billingTok))

	mustCallAs(t, billing, rules.FnSkillsRegister, map[string]string{"id": "billing/invoices", "skill": "# billing"})
	mustCallAs(t, acme, rules.FnSkillsRegister, map[string]string{"id": "acme/crm", "skill": "# acme"})
	mustCallAs(t, acme, rules.FnPromptsRegister, map[string]any{"name": "acme-review", "description": "d", "function_id": "acme::render"})

	_, err := callAs(acme, rules.FnSkillsRegister, map[string]string{"id": "billing/invoices", "skill": "# pwned"}, nil)
	wantOutOfScope(t, err, `skill "billing/invoices" is outside the namespaces of token "acme"`)
	_, err = callAs(acme, rules.FnSkillsUnregister, map[string]string{"id": "billing/invoices"}, nil)
	wantOutOfScope(t, err, `outside the namespaces of token "acme"`)
	_, err = callAs(acme, rules.FnSkillsRegister, map[string]string{"id": "acmecorp/x", "skill": "# x"}, nil)
	wantOutOfScope(t, err, `skill "acmecorp/x" is outside`)
	_, err = callAs(acme, rules.FnPromptsRegister, map[string]any{"name": "acme-steal", "description": "d", "function_id": "billing::charge"}, nil)
	wantOutOfScope(t, err, `function "billing::charge" is outside the namespaces of token "acme"`)
	_, err = callAs(billing, rules.FnSkillsRegister, map[string]string{"id": "acme/crm", "skill": "# pwned"}, nil)
	wantOutOfScope(t, err, `token "billing"`)

	// Another connection of the same token (a second replica of the team's
	// publisher) may update the team's skill.
	mustCallAs(t, acme2, rules.FnSkillsRegister, map[string]string{"id": "acme/crm", "skill": "# acme v2"})
	if id, tok, ok := s.reg.PublisherOf("skill", "acme/crm"); !ok || id != acme2.WorkerID() || tok != "acme" {
		t.Fatalf("PublisherOf(acme/crm) = %q, %q, %v; want %q with token acme", id, tok, ok, acme2.WorkerID())
	}
	if got := skillBody(t, s, "billing/invoices"); !strings.HasSuffix(got, "\n# billing") {
		t.Fatalf("billing's skill reads %q", got)
	}
	if got := skillBody(t, s, "acme/crm"); !strings.HasSuffix(got, "\n# acme v2") {
		t.Fatalf("acme's skill reads %q", got)
	}
	// The operator (shared token) is not scoped, but ownership still holds.
	_, err = callAs(s.caller, rules.FnSkillsUnregister, map[string]string{"id": "acme/crm"}, nil)
	wantForbidden(t, err, "belongs to another worker")
}

// Connections racing to register the same new id: exactly one gets it, the
// others are refused, and the stored body is the winner's.
func TestRacingRegistrationsOfANewIDHaveOneOwner(t *testing.T) {
	s := startStack(t, "")
	s.worker.SetCallerStamped(true)
	const n = 8
	clients := make([]*iii.Client, n)
	for i := range clients {
		clients[i] = connectAs(t, s, "racer")
	}
	errs := make(chan error, n)
	bodies := make(chan string, n)
	for i, c := range clients {
		go func() {
			body := "# racer " + string(rune('a'+i))
			_, err := callAs(c, rules.FnSkillsRegister, map[string]string{"id": "contested/doc", "skill": body}, nil)
			if err == nil {
				bodies <- body
			}
			errs <- err
		}()
	}
	won := 0
	for range clients {
		err := <-errs
		if err == nil {
			won++
			continue
		}
		wantForbidden(t, err, `skill "contested/doc" belongs to another worker`)
	}
	if won != 1 {
		t.Fatalf("%d registrations won; want exactly 1", won)
	}
	if got, want := skillBody(t, s, "contested/doc"), <-bodies; !strings.HasSuffix(got, "\n"+want) {
		t.Fatalf("the skill reads %q; want the winner's %q", got, want)
	}
}

func TestPublisherOfNamesTheRegisteringConnection(t *testing.T) {
	s := startStack(t, "")
	s.worker.SetCallerStamped(true)
	pub := connectAs(t, s, "publisher")
	if _, _, ok := s.reg.PublisherOf("skill", "team/doc"); ok {
		t.Fatal("an unpublished skill has a publisher")
	}
	mustCallAs(t, pub, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# doc"})
	mustCallAs(t, pub, rules.FnPromptsRegister, map[string]any{"name": "team-review", "description": "d", "function_id": "team::render"})
	for _, k := range []struct{ kind, id string }{{"skill", "team/doc"}, {"prompt", "team-review"}} {
		id, tok, ok := s.reg.PublisherOf(k.kind, k.id)
		if !ok || id != pub.WorkerID() || tok != "" {
			t.Fatalf("PublisherOf(%s, %s) = %q, %q, %v; want %q", k.kind, k.id, id, tok, ok, pub.WorkerID())
		}
	}
	if _, _, ok := s.reg.PublisherOf("prompt", "team/doc"); ok {
		t.Fatal("a skill id answered as a prompt's")
	}
	mustCallAs(t, pub, rules.FnSkillsUnregister, map[string]string{"id": "team/doc"})
	if _, _, ok := s.reg.PublisherOf("skill", "team/doc"); ok {
		t.Fatal("an unregistered skill still has a publisher")
	}
}
