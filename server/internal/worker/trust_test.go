package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// Without a scoped token, no other connection rolls back, relabels,
// yanks, unyanks or deprecates a skill (or prompt) while the connection
// that registered it is connected; the owner may, and protected labels
// still need the admin token.
func TestOwnershipCoversLabelRollbackYankAndDeprecate(t *testing.T) {
	s := startStack(t, "", func(_ *stack, o *Options) {
		o.ProtectedLabels, o.AdminToken = []string{"production"}, "s3cret"
	})
	s.worker.SetCallerStamped(true)
	owner := connectAs(t, s, "publisher")
	attacker := connectAs(t, s, "attacker")
	mustCallAs(t, owner, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# v1"})
	mustCallAs(t, owner, rules.FnSkillsRegister, map[string]string{"id": "team/doc", "skill": "# v2"})
	mustCallAs(t, owner, rules.FnPromptsRegister, map[string]any{"name": "team-review", "description": "d", "function_id": "team::render"})
	for _, try := range []struct {
		fn      string
		payload map[string]any
	}{
		{rules.FnSkillsLabel, map[string]any{"id": "team/doc", "label": "stable", "version": 1}},
		{rules.FnSkillsRollback, map[string]any{"id": "team/doc", "version": 1}},
		{rules.FnSkillsYank, map[string]any{"id": "team/doc", "version": 2, "reason": "pwned"}},
		{rules.FnSkillsUnyank, map[string]any{"id": "team/doc", "version": 2}},
		{rules.FnSkillsDeprecate, map[string]any{"id": "team/doc", "message": "pwned"}},
		{rules.FnPromptsYank, map[string]any{"name": "team-review", "version": 1, "reason": "pwned"}},
		{rules.FnPromptsDeprecate, map[string]any{"name": "team-review", "message": "pwned"}},
		{rules.FnPromptsLabel, map[string]any{"name": "team-review", "label": "stable", "version": 1}},
	} {
		_, err := callAs(attacker, try.fn, try.payload, nil)
		wantForbidden(t, err, "belongs to another worker", owner.WorkerID())
	}
	var l history.Listing
	s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "team/doc"}, &l)
	if l.Latest != 2 || len(l.Labels) != 1 || l.Deprecated != "" || l.Versions[0].Yanked != "" {
		t.Fatalf("after the attempts the history is %+v", l)
	}
	if got := skillBody(t, s, "team/doc"); !strings.HasSuffix(got, "# v2") {
		t.Fatalf("after the attempts the skill reads %q", got)
	}
	// The owner may; a protected label still needs the admin token.
	mustCallAs(t, owner, rules.FnSkillsYank, map[string]any{"id": "team/doc", "version": 2, "reason": "bad advice"})
	mustCallAs(t, owner, rules.FnSkillsDeprecate, map[string]any{"id": "team/doc", "message": "use team/doc2"})
	_, err := callAs(owner, rules.FnSkillsLabel, map[string]any{"id": "team/doc", "label": "production", "version": 1}, nil)
	wantRefusal(t, registry.CodeInvalidArguments, err, "protected")
	mustCallAs(t, owner, rules.FnSkillsLabel, map[string]any{"id": "team/doc", "label": "production", "version": 1, "admin_token": "s3cret"})
	// Yanking the version under a protected label needs the token too.
	_, err = callAs(owner, rules.FnSkillsYank, map[string]any{"id": "team/doc", "version": 1, "reason": "x"}, nil)
	wantRefusal(t, registry.CodeInvalidArguments, err, `protected label "production"`)
	// Once the owner is gone, the id is anyone's (as for a register).
	_ = owner.Close()
	testutil.Eventually(t, 10*time.Second, "the owner's connection to close", func() bool {
		_, err := callAs(attacker, rules.FnSkillsUnyank, map[string]any{"id": "team/doc", "version": 2}, nil)
		return err == nil
	})
}

// The functions' payloads: a yank without a reason, a bad digest, an
// unknown version or id, a deprecation without a message key: each its
// code, nothing changed.
func TestYankPayloadsAreChecked(t *testing.T) {
	s := startStack(t, "")
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "p", "skill": "# one"}, nil)
	for _, c := range []struct {
		fn      string
		payload any
		code    string
		says    string
	}{
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": 1}, registry.CodeInvalidArguments, "reason is required"},
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": 1, "reason": "  "}, registry.CodeInvalidArguments, "reason is empty"},
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": 1, "reason": strings.Repeat("r", 2000)}, registry.CodeInvalidArguments, "the limit is 1024"},
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": "sha256:XYZ", "reason": "r"}, registry.CodeInvalidArguments, "expected 64 lowercase hex digits"},
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": 9, "reason": "r"}, registry.CodeNotFound, "skill p has no version 9"},
		{rules.FnSkillsYank, map[string]any{"id": "none", "version": 1, "reason": "r"}, registry.CodeNotFound, "skill none has no versions"},
		{rules.FnSkillsYank, map[string]any{"id": "p", "version": 0, "reason": "r"}, registry.CodeInvalidArguments, "version must be a version number of 1 or more"},
		{rules.FnSkillsYank, []int{1}, registry.CodeInvalidArguments, "must be a JSON object"},
		{rules.FnSkillsUnyank, map[string]any{"id": "p"}, registry.CodeInvalidArguments, "version is required"},
		{rules.FnSkillsDeprecate, map[string]any{"id": "p"}, registry.CodeInvalidArguments, "message is required"},
		{rules.FnSkillsDeprecate, map[string]any{"id": "p", "message": 5}, registry.CodeInvalidArguments, "message must be a string"},
		{rules.FnSkillsDeprecate, map[string]any{"id": "none", "message": "m"}, registry.CodeNotFound, "no versions"},
		{rules.FnSkillFetch, map[string]any{"uri": "iii://p@sha256:" + strings.Repeat("0", 63)}, registry.CodeInvalidArguments, "got 63 characters"},
		{rules.FnSkillFetch, map[string]any{"uri": "iii://p@sha256:" + strings.Repeat("0", 64)}, registry.CodeNotFound, "no version with sha256 " + strings.Repeat("0", 64)},
	} {
		err := s.call(t, c.fn, c.payload, nil)
		wantCode(t, err, c.code)
		wantErr(t, err, c.says)
	}
	var l history.Listing
	s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "p"}, &l)
	if l.Versions[0].Yanked != "" || l.Deprecated != "" {
		t.Fatalf("a refused call changed the history: %+v", l)
	}
}

// Across two registry instances sharing state (engines on one Redis, here
// two embedded engines on one store): pins, yanks and deprecation are the
// same on both, and each one's subscribers hear yank, unyank, deprecate.
func TestYanksAndPinsAreTheSameOnEveryNode(t *testing.T) {
	a, b := twoNodes(t, true)
	evA, evB := subscribe(t, a, "a"), subscribe(t, b, "b")
	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "x", "skill": "# v1"}, nil)
	expectEvent(t, evA, "skill register x")
	expectEvent(t, evB, "skill register x")
	a.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "x", "skill": "# v2"}, nil)
	expectEvent(t, evA, "skill register x")
	expectEvent(t, evB, "skill register x")
	var yr core.YankResult
	a.mustCall(t, rules.FnSkillsYank, map[string]any{"id": "x", "version": 2, "reason": "broken"}, &yr)
	if yr.Served == nil || *yr.Served != 1 {
		t.Fatalf("yank: %+v", yr)
	}
	expectEvent(t, evA, "skill yank x")
	expectEvent(t, evB, "skill yank x")
	for _, s := range []*stack{a, b} {
		if got, _ := readURI(t, s, "iii://x"); got != "# v1" {
			t.Fatalf("unselected read after the yank: %q", got)
		}
		var rr registry.ReadResult
		s.mustCall(t, rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://x@sha256:" + sha("# v2")}, &rr)
		if rr.Contents[0].Text != "# v2" || rr.Contents[0].Yanked != "broken" {
			t.Fatalf("pinned read of the yanked version: %+v", rr)
		}
	}
	b.mustCall(t, rules.FnSkillsDeprecate, map[string]any{"id": "x", "message": "use y"}, nil)
	expectEvent(t, evB, "skill deprecate x")
	expectEvent(t, evA, "skill deprecate x")
	var la, lb history.Listing
	a.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "x"}, &la)
	b.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "x"}, &lb)
	ja, _ := json.Marshal(la)
	jb, _ := json.Marshal(lb)
	if string(ja) != string(jb) || la.Deprecated != "use y" || la.Versions[0].Yanked != "broken" {
		t.Fatalf("the nodes list\n%s\n%s", ja, jb)
	}
	b.mustCall(t, rules.FnSkillsUnyank, map[string]any{"id": "x", "version": 2}, nil)
	expectEvent(t, evB, "skill unyank x")
	expectEvent(t, evA, "skill unyank x")
	testutil.Eventually(t, 5*time.Second, "node a serves version 2 again", func() bool {
		got, _ := readURI(t, a, "iii://x")
		return got == "# v2"
	})
	var cat core.CatalogGetOutput
	a.mustCall(t, rules.FnCatalogGet, map[string]string{"path": "x"}, &cat)
	if cat.Skill == nil || cat.Skill.Version != 2 || cat.Skill.SHA256 != sha("# v2") || cat.Skill.Deprecated != "use y" || string(cat.Skill.SignedBy) != "null" {
		t.Fatalf("catalog entry on a: %+v", cat.Skill)
	}
}

// The experiment of two publishers writing one id at once through two
// nodes, 8 writers each, 48 distinct bodies, three rounds: every
// acknowledged body is a version of its own, the same on both nodes.
func TestConcurrentRegistersOnTwoNodesEachGetAVersion(t *testing.T) {
	a, b := twoNodes(t, true)
	pubA, pubB := connectAs(t, a, "publisher-a"), connectAs(t, b, "publisher-b")
	const writers, bodies = 8, 48
	for round := range 3 {
		acked := map[string]int{}
		var mu sync.Mutex
		next := make(chan int, bodies)
		for i := range bodies {
			next <- i
		}
		close(next)
		var wg sync.WaitGroup
		for _, c := range [](func(string) error){
			func(body string) error {
				_, err := callAs(pubA, rules.FnSkillsRegister, map[string]string{"id": "race", "skill": body}, nil)
				return err
			},
			func(body string) error {
				_, err := callAs(pubB, rules.FnSkillsRegister, map[string]string{"id": "race", "skill": body}, nil)
				return err
			},
		} {
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						body := fmt.Sprintf("# round %d body %d", round, i)
						if err := c(body); err != nil {
							continue // refused (ownership on one node): not acknowledged
						}
						mu.Lock()
						acked[body] = 0
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		if len(acked) == 0 {
			t.Fatalf("round %d: nothing acknowledged", round)
		}
		var la, lb history.Listing
		testutil.Eventually(t, 10*time.Second, "both nodes list the same history", func() bool {
			la, lb = history.Listing{}, history.Listing{}
			a.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "race"}, &la)
			b.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "race"}, &lb)
			ja, _ := json.Marshal(la)
			jb, _ := json.Marshal(lb)
			return string(ja) == string(jb)
		})
		have := map[string]bool{}
		for _, v := range la.Versions {
			have[v.SHA256] = true
		}
		var lost []string
		for body := range acked {
			if !have[sha(body)] {
				lost = append(lost, body)
			}
		}
		if len(lost) > 0 {
			t.Fatalf("round %d: %d of %d acknowledged bodies are in no version: %v", round, len(lost), len(acked), lost)
		}
	}
}

func sha(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}
