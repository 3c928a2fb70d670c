package scope

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

func TestNamespaced(t *testing.T) {
	ns := []string{"acme"}
	for id, want := range map[string]bool{
		"acme": true, "acme::sync": true, "acme/crm": true, "acme-review": true, "acme_x": true,
		"acmecorp::x": false, "acme:x": false, "billing::acme": false, "": false, "ac": false,
	} {
		if got := Namespaced(id, ns); got != want {
			t.Errorf("Namespaced(%q) = %v; want %v", id, got, want)
		}
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

func TestOutOfScope(t *testing.T) {
	acme := Caller{WorkerID: "w", Token: "acme", Namespaces: []string{"acme", "acme-labs"}}
	if err := acme.OutOfScope("bundle", "acme/crm/sync"); err != nil {
		t.Errorf("acme/crm/sync: %v", err)
	}
	err := acme.OutOfScope("bundle", "billing/x")
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != CodeOutOfScope ||
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
	scoped := json.RawMessage(`{"iii_caller":{"worker_id":"w1","token":"acme","namespaces":["acme"]}}`)
	full := json.RawMessage(`{"iii_caller":{"worker_id":"w2","token":""}}`)
	var s Stamped
	// Not known yet: a scoped stamp bounds its caller (without the worker
	// id, which could be forged); a full-access one says nothing.
	if c, ok := s.callerOf(scoped); !ok || c.Token != "acme" || c.WorkerID != "" || s.Trusted() {
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
