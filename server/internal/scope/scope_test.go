package scope

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

func TestNamespaced(t *testing.T) {
	ns := []string{"acme"}
	// Skill ids (and bundles' iii ids) split at '/' only.
	for id, want := range map[string]bool{
		"acme": true, "acme/crm": true, "acme/crm/sync": true,
		"acme-corp/x": false, "acme_x": false, "acme-review": false, "acmecorp/x": false, "billing/acme": false, "": false, "ac": false,
	} {
		if got := NamespacedSkill(id, ns); got != want {
			t.Errorf("NamespacedSkill(%q) = %v; want %v", id, got, want)
		}
	}
	// Prompt names split at '-' and '_'; a longer namespace of another
	// token wins.
	for name, want := range map[string]bool{
		"acme": true, "acme-review": true, "acme_x": true, "acme-corpx": true,
		"acme-corp": false, "acme-corp-review": false, "acme-corp_x": false, "acmecorp": false, "ac": false, "": false,
	} {
		if got := NamespacedPrompt(name, ns, []string{"acme-corp"}); got != want {
			t.Errorf("NamespacedPrompt(%q) beside acme-corp = %v; want %v", name, got, want)
		}
	}
	// A token holding both the short and the nested long namespace keeps
	// the long one's prompts; without another token, acme covers them.
	if !NamespacedPrompt("acme-corp-x", []string{"acme", "acme-corp-x"}, []string{"acme-corp"}) {
		t.Error("acme-corp-x held by the caller itself is refused because of acme-corp")
	}
	if !NamespacedPrompt("acme-corp-review", ns, nil) {
		t.Error("acme-corp-review without another token holding acme-corp is refused")
	}
	for id, want := range map[string]bool{
		"acme::sync": true, "acme": true, "prompt::acme-review": true, "prompt::acme": true, "iii-skills::1a2b::connected": true,
		"acme-x::y": false, "acme/x": false, "prompt::billing-x": false, "prompt::acme::x": false, "iii-skills::": false,
		"billing::acme": false, "skills::register": false,
	} {
		if got := NamespacedFunction(id, ns); got != want {
			t.Errorf("NamespacedFunction(%q) = %v; want %v", id, got, want)
		}
	}
}

func TestNestedNamespaces(t *testing.T) {
	got := Nested([]string{"acme", "labs"}, [][]string{{"acme-corp", "acme_eu", "acmecorp"}, {"labs-x", "acme-corp", "billing"}})
	if strings.Join(got, ",") != "acme-corp,acme_eu,labs-x" {
		t.Errorf("Nested = %v", got)
	}
	acme := Caller{WorkerID: "w", Token: "acme", Namespaces: []string{"acme"}, Nested: []string{"acme-corp"}}
	for _, c := range []struct {
		kind, id string
		want     bool
	}{
		{KindPrompt, "acme-review", true}, {KindPrompt, "acme-corp-review", false},
		{KindSkill, "acme/x", true}, {KindSkill, "acme-corp/x", false}, {KindBundle, "acme/crm/sync", true},
	} {
		if got := acme.Covers(c.kind, c.id); got != c.want {
			t.Errorf("Covers(%s %q) = %v; want %v", c.kind, c.id, got, c.want)
		}
	}
	if !acme.CoversFunction("prompt::acme-review") || acme.CoversFunction("prompt::acme-corp-review") || !acme.CoversFunction("acme::x") {
		t.Error("CoversFunction: prompt handlers follow the prompt rule")
	}
	if !(Caller{WorkerID: "w"}).Covers(KindPrompt, "acme-corp-review") {
		t.Error("a full-access caller covers everything")
	}
}

func TestOutOfScope(t *testing.T) {
	acme := Caller{WorkerID: "w", Token: "acme", Namespaces: []string{"acme", "acme-labs"}}
	if err := acme.OutOfScope("bundle", "acme/crm/sync"); err != nil {
		t.Errorf("acme/crm/sync: %v", err)
	}
	err := acme.OutOfScope("bundle", "billing/x")
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != rules.CodeOutOfScope ||
		ie.Message != `forbidden: bundle "billing/x" is outside the namespaces of token "acme" (acme, acme-labs)` {
		t.Errorf("billing/x: %v", err)
	}
	if err := (Caller{WorkerID: "w"}).OutOfScope("bundle", "billing/x"); err != nil {
		t.Errorf("a full-access caller: %v", err)
	}
}

func TestFromMetadata(t *testing.T) {
	got := FromMetadata(json.RawMessage(`{"trace":1,"iii_caller":{"worker_id":"w","token":"acme","namespaces":["acme"]}}`))
	if got.WorkerID != "w" || got.Token != "acme" || strings.Join(got.Namespaces, ",") != "acme" {
		t.Errorf("FromMetadata = %+v", got)
	}
	for _, m := range []string{``, `null`, `[]`, `{"iii_caller":"x"}`, `{`} {
		if got := FromMetadata(json.RawMessage(m)); got.Scoped() || got.WorkerID != "" {
			t.Errorf("FromMetadata(%q) = %+v; want zero", m, got)
		}
	}
}

func TestStampedTrustsOnlyWhatItMay(t *testing.T) {
	scoped := json.RawMessage(`{"iii_caller":{"worker_id":"w1","token":"acme","namespaces":["acme"],"nested":["acme-corp"]}}`)
	full := json.RawMessage(`{"iii_caller":{"worker_id":"w2","token":""}}`)
	var s Stamped
	// Not known yet: a scoped stamp bounds its caller (without the worker
	// id, which could be forged); a full-access one says nothing.
	if c, ok := s.callerOf(scoped); !ok || c.Token != "acme" || c.WorkerID != "" || strings.Join(c.Nested, ",") != "acme-corp" || s.Trusted() {
		t.Errorf("unknown, scoped stamp: %+v %v", c, ok)
	}
	if c, ok := s.callerOf(full); ok {
		t.Errorf("unknown, full-access stamp: %+v", c)
	}
	s.Set(true)
	if c, ok := s.callerOf(full); !ok || c.WorkerID != "w2" || c.Scoped() || !s.Trusted() {
		t.Errorf("trusted, full-access stamp: %+v %v", c, ok)
	}
	if c, ok := s.callerOf(scoped); !ok || c.WorkerID != "w1" || c.Token != "acme" {
		t.Errorf("trusted, scoped stamp: %+v %v", c, ok)
	}
	s.Set(false)
	if c, ok := s.callerOf(scoped); ok || s.Trusted() {
		t.Errorf("an engine that does not stamp: %+v", c)
	}
}
