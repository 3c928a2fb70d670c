package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// backends runs a test with state kept through state::* calls (a worker
// against any engine) and in the engine's store in-process (what the
// standalone binary runs: the served row and a new version's records in
// one store transaction).
func backends(t *testing.T, run func(t *testing.T, opts ...func(*stack, *Options))) {
	t.Run("state-calls", func(t *testing.T) { run(t) })
	t.Run("engine-store", func(t *testing.T) { run(t, standalone) })
}

func readURI(t *testing.T, s *stack, uri string) (string, error) {
	t.Helper()
	var out registry.ReadResult
	if err := s.call(t, rules.FnSkillsResourcesRead, map[string]string{"uri": uri}, &out); err != nil {
		return "", err
	}
	return out.Contents[0].Text, nil
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var inv *iii.InvocationError
	if !errors.As(err, &inv) || inv.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

func TestVersionsOfSkills(t *testing.T) {
	backends(t, func(t *testing.T, opts ...func(*stack, *Options)) {
		s := startStack(t, t.TempDir(), opts...)
		reg := func(body, msg string) {
			s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": body, "message": msg, "author": "ci"}, nil)
		}
		reg("# One\n", "first")
		reg("# One\n", "") // unchanged: no version
		reg("# Two\n", "second")
		var l history.Listing
		s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "a/b"}, &l)
		if l.Latest != 2 || len(l.Versions) != 2 || l.Versions[0].Message != "second" || l.Versions[1].Author != "ci" ||
			l.Versions[0].Labels[0] != "latest" || l.Labels["latest"] != 2 || l.Versions[1].Bytes != 6 || len(l.Versions[1].SHA256) != 64 {
			t.Fatalf("versions: %+v", l)
		}
		// Reads by selector, everywhere an iii:// URI is read.
		for uri, want := range map[string]string{"iii://a/b@1": "# One\n", "iii://a/b@latest": "# Two\n", "iii://a/b": "# Two\n"} {
			if got, err := readURI(t, s, uri); err != nil || got != want {
				t.Fatalf("read %s = %q, %v", uri, got, err)
			}
		}
		var fetched string
		s.mustCall(t, rules.FnSkillFetch, map[string]string{"uri": "iii://a/b@1"}, &fetched)
		if !strings.Contains(fetched, "# One") {
			t.Fatalf("skill::fetch @1: %q", fetched)
		}
		_, err := readURI(t, s, "iii://a/b@7")
		wantErr(t, err, "skill a/b has no version 7 (kept: 1-2)")
		wantCode(t, err, registry.CodeNotFound)
		_, err = readURI(t, s, "iii://a/b@prod")
		wantErr(t, err, `skill a/b has no label "prod" (labels: latest)`)
		wantCode(t, err, registry.CodeNotFound)
		_, err = readURI(t, s, "iii://a/b@")
		wantCode(t, err, registry.CodeInvalidArguments)
		_, err = readURI(t, s, "iii://Bad@1")
		wantCode(t, err, registry.CodeInvalidArguments)

		// Labels, diff, rollback.
		var move history.LabelMove
		s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "production", "version": 1}, &move)
		if move.Version != 1 || move.Previous != 0 {
			t.Fatalf("label: %+v", move)
		}
		if got, _ := readURI(t, s, "iii://a/b@production"); got != "# One\n" {
			t.Fatalf("read @production = %q", got)
		}
		wantCode(t, s.call(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "latest", "version": 1}, nil), registry.CodeInvalidArguments)
		wantCode(t, s.call(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "x", "version": 0}, nil), registry.CodeInvalidArguments)
		wantErr(t, s.call(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "x", "version": 9}, nil), "no version 9")
		var d core.DiffResult
		s.mustCall(t, rules.FnSkillsDiff, map[string]any{"id": "a/b", "from": "production", "to": 2}, &d)
		if d.Diff != "--- a/b@1\n+++ a/b@2\n@@ -1 +1 @@\n-# One\n+# Two\n" {
			t.Fatalf("diff: %+v", d)
		}
		var rb core.RollbackResult
		s.mustCall(t, rules.FnSkillsRollback, map[string]any{"id": "a/b", "version": "production"}, &rb)
		if rb.Version != 3 || !rb.Created || rb.RolledBack != 1 {
			t.Fatalf("rollback: %+v", rb)
		}
		if got, _ := readURI(t, s, "iii://a/b"); got != "# One\n" {
			t.Fatalf("after rollback: %q", got)
		}
		s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "a/b"}, &l)
		if l.Latest != 3 || l.Versions[0].Message != "rollback to version 1" || len(l.Versions) != 3 {
			t.Fatalf("after rollback: %+v", l)
		}

		// Unregister keeps history; a new register continues the numbering.
		s.mustCall(t, rules.FnSkillsUnregister, map[string]string{"id": "a/b"}, nil)
		if got, _ := readURI(t, s, "iii://a/b@2"); got != "# Two\n" {
			t.Fatalf("history after unregister: %q", got)
		}
		_, err = readURI(t, s, "iii://a/b")
		wantErr(t, err, "Skill not found: a/b")
		reg("# Four\n", "")
		s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "a/b"}, &l)
		if l.Latest != 4 {
			t.Fatalf("numbering after unregister: %+v", l)
		}
		wantErr(t, s.call(t, rules.FnSkillsVersions, map[string]string{"id": "nope"}, nil), "skill nope has no versions")
		wantCode(t, s.call(t, rules.FnSkillsVersions, map[string]string{"id": "nope"}, nil), registry.CodeNotFound)
		wantCode(t, s.call(t, rules.FnSkillsVersions, map[string]any{"id": 5}, nil), registry.CodeInvalidArguments)
		wantCode(t, s.call(t, rules.FnSkillsRegister, map[string]any{"id": "m", "skill": "x", "message": strings.Repeat("m", 5000)}, nil), registry.CodeInvalidArguments)
	})
}

func TestServeLabelAndProtectedLabels(t *testing.T) {
	s := startStack(t, t.TempDir(), func(s *stack, o *Options) {
		o.ServeLabel, o.ProtectedLabels, o.AdminToken = "production", []string{"production"}, "s3cret"
	})
	events := make(chan string, 16)
	if _, err := s.caller.RegisterFunction("sub::skills", func(_ context.Context, data json.RawMessage) (any, error) {
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		events <- m["op"].(string) + " " + m["id"].(string)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.caller.RegisterTrigger("sub-skills", rules.TriggerSkillsOnChange, "sub::skills", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the subscription is bound", func() bool { return len(s.worker.skillSubs.Bindings()) == 1 })
	next := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event, want %q", want)
		}
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "s", "skill": "v1"}, nil)
	next("register s")
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "s", "skill": "v2"}, nil)
	next("register s")
	// No production label yet: the newest is served.
	if got, _ := readURI(t, s, "iii://s"); got != "v2" {
		t.Fatalf("served %q", got)
	}
	err := s.call(t, rules.FnSkillsLabel, map[string]any{"id": "s", "label": "production", "version": 1}, nil)
	wantErr(t, err, "protected")
	wantCode(t, err, registry.CodeInvalidArguments)
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "s", "label": "production", "version": 1, "admin_token": "s3cret"}, nil)
	next("register s") // what is served changed
	if got, _ := readURI(t, s, "iii://s"); got != "v1" {
		t.Fatalf("served with production at 1: %q", got)
	}
	// A new version is staged, production still serves 1.
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "s", "skill": "v3"}, nil)
	next("register s")
	if got, _ := readURI(t, s, "iii://s"); got != "v1" {
		t.Fatalf("served after staging v3: %q", got)
	}
	if got, _ := readURI(t, s, "iii://s@latest"); got != "v3" {
		t.Fatalf("latest: %q", got)
	}
	// Unprotected labels move freely and serve nothing by themselves.
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "s", "label": "staging", "version": 3}, nil)
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "s", "label": "production", "version": "staging", "admin_token": "s3cret"}, nil)
	next("register s")
	if got, _ := readURI(t, s, "iii://s"); got != "v3" {
		t.Fatalf("served after promotion: %q", got)
	}
}

func TestVersionsOfPrompts(t *testing.T) {
	s := startStack(t, t.TempDir())
	reg := func(desc string) {
		s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "p", "description": desc, "function_id": "f::g", "message": desc}, nil)
	}
	reg("one")
	reg("one")
	reg("two")
	var l history.Listing
	s.mustCall(t, rules.FnPromptsVersions, map[string]string{"name": "p"}, &l)
	if l.Latest != 2 || len(l.Versions) != 2 || l.Versions[0].Message != "two" {
		t.Fatalf("prompt versions: %+v", l)
	}
	// Each prompt version carries its definition, the exact bytes its
	// sha256 digests (and a signature covers); skill versions carry none.
	for i, desc := range []string{"two", "one"} {
		v := l.Versions[i]
		want := string(rules.CanonicalPrompt(desc, "f::g", nil))
		sum := sha256.Sum256([]byte(v.Definition))
		if v.Definition != want || hex.EncodeToString(sum[:]) != v.SHA256 {
			t.Fatalf("prompt version %d: definition %q (sha256 %s), want %q", v.Version, v.Definition, v.SHA256, want)
		}
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]any{"id": "plain", "skill": "# plain\n"}, nil)
	var sl history.Listing
	s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "plain"}, &sl)
	if len(sl.Versions) != 1 || sl.Versions[0].Definition != "" {
		t.Fatalf("skill versions carry content: %+v", sl)
	}
	var d core.DiffResult
	s.mustCall(t, rules.FnPromptsDiff, map[string]any{"name": "p", "from": 1, "to": 2}, &d)
	if !strings.Contains(d.Diff, `-  "description": "one",`) || !strings.Contains(d.Diff, `+  "description": "two",`) {
		t.Fatalf("prompt diff:\n%s", d.Diff)
	}
	s.mustCall(t, rules.FnPromptsLabel, map[string]any{"name": "p", "label": "stable", "version": 1}, nil)
	var rb core.RollbackResult
	s.mustCall(t, rules.FnPromptsRollback, map[string]any{"name": "p", "version": "stable"}, &rb)
	if rb.Version != 3 || rb.RolledBack != 1 {
		t.Fatalf("prompt rollback: %+v", rb)
	}
	raw, _, err := s.state.Get(context.Background(), "prompts", "p")
	if err != nil || !strings.Contains(string(raw), `"description":"one"`) {
		t.Fatalf("after rollback: %s %v", raw, err)
	}
	wantErr(t, s.call(t, rules.FnPromptsVersions, map[string]string{"name": "nope"}, nil), "prompt nope has no versions")
	wantCode(t, s.call(t, rules.FnPromptsVersions, map[string]string{"name": "nope"}, nil), registry.CodeNotFound)
}

func TestHistorySurvivesRestartAndRecordsOlderContent(t *testing.T) {
	dir := t.TempDir()
	s := startStack(t, dir)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "k", "skill": "one"}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "k", "skill": "two"}, nil)
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "k", "label": "good", "version": 1}, nil)
	// Written straight into state: history records it (state trigger).
	row := registry.NewStoredSkill("k", "three", time.Now())
	s.mustCall(t, "state::set", map[string]any{"scope": "skills", "key": "k", "value": row}, nil)
	testutil.Eventually(t, 5*time.Second, "a direct state write becomes a version", func() bool {
		var l history.Listing
		s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "k"}, &l)
		return l.Latest == 3
	})
	// A skill stored before history existed: its row has no history yet.
	old := registry.NewStoredSkill("legacy", "legacy body", time.Now())
	s.mustCall(t, "state::set", map[string]any{"scope": "skills", "key": "legacy", "value": old}, nil)
	s.stop()

	s = startStack(t, dir)
	var l history.Listing
	testutil.Eventually(t, 5*time.Second, "start-up records served content history lacks", func() bool {
		return s.call(t, rules.FnSkillsVersions, map[string]string{"id": "legacy"}, &l) == nil
	})
	s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "k"}, &l)
	if l.Latest != 3 || l.Labels["good"] != 1 {
		t.Fatalf("after restart: %+v", l)
	}
	if got, _ := readURI(t, s, "iii://k@good"); got != "one" {
		t.Fatalf("label after restart: %q", got)
	}
}

// TestSubscribeVersionsSeesEveryHistoryChange: the web page refreshes its
// versions list from this feed, label moves that change nothing served
// (and so fire no skills::on-change) included.
func TestSubscribeVersionsSeesEveryHistoryChange(t *testing.T) {
	s := startStack(t, t.TempDir(), func(_ *stack, o *Options) { o.ServeLabel = "production" })
	var mu sync.Mutex
	var got []string
	cancel := s.reg.SubscribeVersions(func(kind core.Kind, id string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(kind)+" "+id)
	})
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, ",")
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": "# One\n"}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": "# One\n"}, nil) // unchanged: nothing
	s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "staging", "version": 1}, nil)
	s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "p", "description": "P", "function_id": "x::y"}, nil)
	if want := "skill a/b,skill a/b,prompt p"; seen() != want {
		t.Fatalf("feed %q, want %q", seen(), want)
	}
	if s.reg.ServeLabel() != "production" {
		t.Fatalf("serve label %q", s.reg.ServeLabel())
	}
	cancel()
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": "# Two\n"}, nil)
	if want := "skill a/b,skill a/b,prompt p"; seen() != want {
		t.Fatalf("after cancel: feed %q", seen())
	}
}

// TestJointWriteFiresStateTriggersLikeStateSet: in standalone mode a
// registration stores its row and history in one transaction without a
// state::set frame; other state bindings on the skills scope still see
// state:created / state:updated with the old and new rows, and history
// holds every version.
func TestJointWriteFiresStateTriggersLikeStateSet(t *testing.T) {
	s := startStack(t, t.TempDir(), standalone)
	type event struct {
		EventType string          `json:"event_type"`
		Key       string          `json:"key"`
		OldValue  json.RawMessage `json:"old_value"`
		NewValue  json.RawMessage `json:"new_value"`
	}
	events := make(chan event, 64)
	if _, err := s.caller.RegisterFunction("test::watch", func(_ context.Context, data json.RawMessage) (any, error) {
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, err
		}
		events <- ev
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.caller.RegisterTrigger("watch-skills", "state", "test::watch", json.RawMessage(`{"scope":"skills"}`)); err != nil {
		t.Fatal(err)
	}
	// The binding is live once a probe registration reaches it.
	for i := 0; ; i++ {
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "w/probe", "skill": fmt.Sprintf("# probe %d\n", i)}, nil)
		select {
		case <-events:
		case <-time.After(100 * time.Millisecond):
			if i < 100 {
				continue
			}
			t.Fatal("the state binding never fired")
		}
		break
	}
	next := func() event {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Key == "a/b" {
					return ev
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no state event for a/b")
			}
		}
	}
	row := func(raw json.RawMessage) string {
		var r registry.StoredSkill
		if len(raw) == 0 || string(raw) == "null" {
			return "null"
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("row %s: %v", raw, err)
		}
		return r.Skill
	}
	for i, step := range []struct{ body, typ, old string }{
		{"# One\n", "state:created", "null"},
		{"# Two\n", "state:updated", "# One\n"},
		{"# Two\n", "state:updated", "# Two\n"}, // unchanged content: the row is still written, like upstream
	} {
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": step.body}, nil)
		ev := next()
		if ev.EventType != step.typ || row(ev.OldValue) != step.old || row(ev.NewValue) != step.body {
			t.Fatalf("step %d: event %s old %q new %q; want %s old %q new %q", i, ev.EventType, row(ev.OldValue), row(ev.NewValue), step.typ, step.old, step.body)
		}
	}
	var l history.Listing
	s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "a/b"}, &l)
	if l.Latest != 2 || len(l.Versions) != 2 {
		t.Fatalf("versions after the joint writes: %+v", l)
	}
	if got, err := readURI(t, s, "iii://a/b@1"); err != nil || got != "# One\n" {
		t.Fatalf("iii://a/b@1 = %q, %v", got, err)
	}
}

// TestServeLabelListsWhatIsServed: with serve_label set, a label pointing
// at v1 while v2 exists makes every surface describe v1: skills::list,
// skills::resources-list, the iii://skills index, search, the catalog the
// MCP surfaces read, and reads; moving the label moves all of them, also
// after a restart (the cold load).
func TestServeLabelListsWhatIsServed(t *testing.T) {
	backends(t, func(t *testing.T, opts ...func(*stack, *Options)) {
		dir := t.TempDir()
		opts = append(opts, func(_ *stack, o *Options) { o.ServeLabel = "production" })
		s := startStack(t, dir, opts...)
		v1 := "# Alpha mail\n\nAlpha retries for outgoing mail.\n"
		v2 := "# Bravo mail\n\nBravo queueing for outgoing mail, with a much longer description.\n"
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": v1}, nil)
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": v2}, nil)
		s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "production", "version": 1}, nil)
		var l history.Listing
		s.mustCall(t, rules.FnSkillsVersions, map[string]string{"id": "a/b"}, &l)
		v1At := l.Versions[1].RegisteredAt
		checkServes(t, s, v1, "Alpha", "Bravo", v1At)

		// A new version at the id is staged: production still serves v1.
		v3 := "# Charlie mail\n\nCharlie batching for outgoing mail.\n"
		s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "a/b", "skill": v3}, nil)
		checkServes(t, s, v1, "Alpha", "Charlie", v1At)

		// After a restart the cold load pins v1 again.
		s.stop()
		s = startStack(t, dir, opts...)
		testutil.Eventually(t, 5*time.Second, "the published mirror is loaded", s.reg.Loaded)
		checkServes(t, s, v1, "Alpha", "Charlie", v1At)

		// Promoting v3 moves every surface to it.
		s.mustCall(t, rules.FnSkillsLabel, map[string]any{"id": "a/b", "label": "production", "version": 3}, nil)
		checkServes(t, s, v3, "Charlie", "Alpha", "")
	})
}

// checkServes asserts that every surface describes body for a/b: word is
// in its description, gone is not, and skills::list shows body's size
// (and at, when given, as registered_at).
func checkServes(t *testing.T, s *stack, body, word, gone, at string) {
	t.Helper()
	if got, err := readURI(t, s, "iii://a/b"); err != nil || got != body {
		t.Fatalf("iii://a/b = %q, %v; want %q", got, err, body)
	}
	var fetched string
	s.mustCall(t, rules.FnSkillFetch, map[string]string{"uri": "iii://a/b"}, &fetched)
	if !strings.Contains(fetched, word) || strings.Contains(fetched, gone) {
		t.Fatalf("skill::fetch iii://a/b = %q; want %q, not %q", fetched, word, gone)
	}
	var list registry.SkillList
	s.mustCall(t, rules.FnSkillsList, nil, &list)
	if len(list.Skills) != 1 || list.Skills[0].Bytes != len(body) || (at != "" && list.Skills[0].RegisteredAt != at) {
		t.Fatalf("skills::list = %+v; want %d bytes registered at %q", list.Skills, len(body), at)
	}
	index, err := readURI(t, s, registry.IndexURI)
	if err != nil || !strings.Contains(index, word) || strings.Contains(index, gone) {
		t.Fatalf("index = %q, %v; want %q, not %q", index, err, word, gone)
	}
	var res struct {
		Resources []map[string]any `json:"resources"`
	}
	s.mustCall(t, rules.FnSkillsResourcesList, nil, &res)
	if r := fmt.Sprint(res.Resources[1]); !strings.Contains(r, word) || strings.Contains(r, gone) {
		t.Fatalf("resources-list a/b = %v; want %q, not %q", res.Resources[1], word, gone)
	}
	e, ok := s.reg.Catalog().Get("a/b") // what MCP and the Skills Protocol read
	if got, _ := e.Body.String(); !ok || got != body {
		t.Fatalf("catalog a/b = %q; want %q", got, body)
	}
	search := func(q string) int {
		var out core.SearchOutput
		s.mustCall(t, rules.FnSkillsSearch, map[string]string{"query": q}, &out)
		n := 0
		for _, r := range out.Results {
			if r.ID == "a/b" && !out.LowConfidence {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, 5*time.Second, "search finds "+word+" and not "+gone, func() bool {
		return search(strings.ToLower(word)) == 1 && search(strings.ToLower(gone)) == 0
	})
}

// TestServeLabelListsServedPrompts: prompts::list and prompts::mcp-list
// describe the definition the serve label pins, as prompts::mcp-get
// serves it.
func TestServeLabelListsServedPrompts(t *testing.T) {
	s := startStack(t, t.TempDir(), standalone, func(_ *stack, o *Options) { o.ServeLabel = "production" })
	for _, desc := range []string{"first definition", "second definition"} {
		s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": "p", "description": desc, "function_id": "f::g"}, nil)
	}
	lists := func() (list registry.PromptList, mcp string) {
		var b json.RawMessage
		s.mustCall(t, rules.FnPromptsList, nil, &list)
		s.mustCall(t, rules.FnPromptsMCPList, nil, &b)
		return list, string(b)
	}
	var l history.Listing
	s.mustCall(t, rules.FnPromptsVersions, map[string]string{"name": "p"}, &l)
	if list, mcp := lists(); strings.Contains(mcp, "first") || !strings.Contains(mcp, "second definition") || list.Prompts[0].RegisteredAt == l.Versions[1].RegisteredAt {
		t.Fatalf("without a production label the newest is listed: %+v %s", list, mcp)
	}
	s.mustCall(t, rules.FnPromptsLabel, map[string]any{"name": "p", "label": "production", "version": 1}, nil)
	if list, mcp := lists(); strings.Contains(mcp, "second") || !strings.Contains(mcp, "first definition") || list.Prompts[0].RegisteredAt != l.Versions[1].RegisteredAt {
		t.Fatalf("with production at 1 (registered %s): %+v %s", l.Versions[1].RegisteredAt, list, mcp)
	}
}
