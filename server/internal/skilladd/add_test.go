package skilladd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// fakeRegistry answers the five functions Add calls, for the unit tests
// of its bookkeeping (the process tests in server/cmd/skills run it
// against the real registry).
type fakeRegistry struct {
	bodies map[string][]string // id → bodies, oldest first
	served map[string]bool
	held   map[string]bool // ids another connection holds
	calls  []string
}

func (f *fakeRegistry) call(_ context.Context, fn string, payload any) (json.RawMessage, error) {
	p := payload.(map[string]any)
	id, _ := p["id"].(string)
	f.calls = append(f.calls, fn+" "+id)
	switch fn {
	case rules.FnSkillsList:
		var rows []map[string]any
		for id := range f.served {
			rows = append(rows, map[string]any{"id": id})
		}
		return json.Marshal(map[string]any{"skills": rows})
	case rules.FnSkillsVersions:
		b := f.bodies[id]
		if len(b) == 0 {
			return nil, &iii.InvocationError{Code: rules.CodeNotFound, Message: "skill " + id + " has no versions"}
		}
		var vs []map[string]any
		for i := len(b) - 1; i >= 0; i-- {
			sum := sha256.Sum256([]byte(b[i]))
			vs = append(vs, map[string]any{"version": i + 1, "sha256": hex.EncodeToString(sum[:])})
		}
		return json.Marshal(map[string]any{"latest": len(b), "versions": vs})
	case rules.FnSkillsRegister:
		if f.held[id] {
			return nil, &iii.InvocationError{Code: rules.CodeForbidden, Message: "skill " + id + " belongs to another worker"}
		}
		f.bodies[id] = append(f.bodies[id], p["skill"].(string))
		f.served[id] = true
	case rules.FnSkillsUnregister:
		delete(f.served, id)
	case rules.FnSkillsRollback:
		v := p["version"].(int)
		f.bodies[id] = append(f.bodies[id], f.bodies[id][v-1])
	default:
		return nil, fmt.Errorf("unexpected %s", fn)
	}
	return json.RawMessage(`{}`), nil
}

func planned(arg string, bodies map[string]string) Planned {
	p := Planned{Arg: arg}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range bodies {
			if !yield(id) {
				return
			}
		}
	}) {
		sum := sha256.Sum256([]byte(bodies[id]))
		p.Skills = append(p.Skills, Skill{ID: id, Body: bodies[id], SHA256: hex.EncodeToString(sum[:]), Message: "skills add: folder /x"})
	}
	return p
}

// A SOURCE the registry refuses part-way is undone: a new id
// unregistered, an existing one rolled back to its previous version; the
// SOURCEs before it stay, the ones after it are not tried; an unchanged
// body registers nothing.
func TestAddUndoesARefusedSource(t *testing.T) {
	f := &fakeRegistry{
		bodies: map[string][]string{"b": {"old b 1", "old b 2"}, "same": {"same body"}},
		served: map[string]bool{"b": true, "same": true},
		held:   map[string]bool{"c": true},
	}
	plans := []Planned{
		planned("first", map[string]string{"same": "same body", "z": "z body"}),
		planned("second", map[string]string{"a": "a body", "b": "new b", "c": "c body"}),
		planned("third", map[string]string{"d": "d body"}),
	}
	rep, err := Add(context.Background(), f.call, plans, Options{OwnerWait: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "second: skill c: FORBIDDEN: skill c belongs to another worker") ||
		!strings.Contains(err.Error(), "the skills of second registered before it were undone, and no later SOURCE was tried") {
		t.Fatalf("Add: %v", err)
	}
	if len(rep.Sources) != 2 {
		t.Fatalf("report %+v", rep)
	}
	st := func(s SourceReport) []string {
		var out []string
		for _, a := range s.Skills {
			out = append(out, fmt.Sprintf("%s %s %d", a.ID, a.Status, a.Version))
		}
		return out
	}
	if got := st(rep.Sources[0]); !slices.Equal(got, []string{"same unchanged 1", "z registered 1"}) {
		t.Fatalf("first: %v", got)
	}
	if got := st(rep.Sources[1]); !slices.Equal(got, []string{"a undone 0", "b undone 0"}) {
		t.Fatalf("second: %v", got)
	}
	if f.served["a"] || !f.served["b"] || f.bodies["b"][len(f.bodies["b"])-1] != "old b 2" || f.served["d"] {
		t.Fatalf("registry after: served %v, b %v", f.served, f.bodies["b"])
	}
	if slices.Contains(f.calls, rules.FnSkillsRegister+" same") {
		t.Fatal("an unchanged body was registered again")
	}
	if i, j := slices.Index(f.calls, rules.FnSkillsRollback+" b"), slices.Index(f.calls, rules.FnSkillsUnregister+" a"); i < 0 || j < i {
		t.Fatalf("undo order (newest first): %v", f.calls)
	}
}
