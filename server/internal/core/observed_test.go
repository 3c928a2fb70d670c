package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
)

// reads records what a ReadCounter is told, with the reader the test put
// in ctx.
type reads struct {
	mu  sync.Mutex
	got []string
}

type readerKey struct{}

func (r *reads) CountRead(ctx context.Context, id, version string) {
	who, _ := ctx.Value(readerKey{}).(string)
	r.mu.Lock()
	r.got = append(r.got, fmt.Sprintf("%s %s@%s", who, id, version))
	r.mu.Unlock()
}

func (r *reads) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.got, "; ")
	r.got = nil
	return out
}

// Every read the registry serves is counted once, with the version it
// served: the served version of a published skill (a label's when the
// serve label pins one), the selected one, none for a folder skill, its
// main file only; catalog reads count SKILL.md's first chunk; the index
// and a failed read count nothing.
func TestReadsAreCountedWithTheVersionServed(t *testing.T) {
	l := newLocal(t)
	r := &reads{}
	l.SetReadCounter(r)
	ctx := context.WithValue(context.Background(), readerKey{}, "a")
	mustRegister(t, l, "team/deploy", "# Deploy v1\n")
	mustRegister(t, l, "team/deploy", "# Deploy v2\n")
	src, err := l.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	folder := folderSkill("docs/intro", "# Intro\n")
	folder.Files = []catalog.File{catalog.NewFile("SKILL.md", []byte("# Intro\n"), folder.Modified, nil),
		catalog.NewFile("ref.md", []byte("ref"), folder.Modified, nil)}
	folder.Main = "SKILL.md"
	if err := src.Put(folder); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"iii://team/deploy", "iii://team/deploy@1", "iii://docs/intro", "iii://docs/intro/ref.md",
		"iii://docs/intro/SKILL.md", "iii://skills"} {
		if _, err := l.Read(ctx, uri); err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
	}
	if _, err := l.Read(ctx, "iii://team/nope"); err == nil {
		t.Fatal("an unknown skill was read")
	}
	if got, want := r.take(), "a team/deploy@2; a team/deploy@1; a docs/intro@; a docs/intro@"; got != want {
		t.Fatalf("counted %q; want %q", got, want)
	}
	if _, err := l.Label(ctx, Operator(), KindSkill, LabelInput{ID: "team/deploy", Label: "prod", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	if v := l.ReadVersion("team/deploy", "prod"); v != "1" {
		t.Fatalf("ReadVersion(prod) = %q; want 1", v)
	}
	if _, err := l.CatalogFile(ctx, "team/deploy", "SKILL.md"); err != nil {
		t.Fatal(err)
	}
	l.CountCatalogRead(ctx, "team/deploy", "SKILL.md", 4096) // a later chunk of one read
	l.CountCatalogRead(ctx, "docs/intro", "ref.md", 0)       // not the skill's SKILL.md
	if got, want := r.take(), "a team/deploy@2"; got != want {
		t.Fatalf("catalog reads counted %q; want %q", got, want)
	}
	// Reads without a counter are not counted, and cost nothing.
	l.SetReadCounter(nil)
	if _, err := l.Read(ctx, "iii://team/deploy"); err != nil {
		t.Fatal(err)
	}
	if got := r.take(); got != "" {
		t.Fatalf("counted %q with no counter", got)
	}
}

// The serve label decides which version a plain read serves, and so the
// version counted.
func TestReadsFollowTheServeLabel(t *testing.T) {
	l := newLocal(t)
	l.hist.serveLabel = "prod"
	r := &reads{}
	l.SetReadCounter(r)
	mustRegister(t, l, "team/deploy", "# v1\n")
	mustRegister(t, l, "team/deploy", "# v2\n")
	if _, err := l.Label(context.Background(), Operator(), KindSkill, LabelInput{ID: "team/deploy", Label: "prod", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(l, "iii://team/deploy"); err != nil {
		t.Fatal(err)
	}
	if got := r.take(); got != " team/deploy@1" {
		t.Fatalf("counted %q; want the label's version 1", got)
	}
}

// events records the registry's change events.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(_ context.Context, ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := ev.Op + " " + ev.ID
	if ev.Version > 0 {
		s += fmt.Sprintf(" v%d", ev.Version)
	}
	if ev.Label != "" {
		s += fmt.Sprintf(" %s (was %d)", ev.Label, ev.Previous)
	}
	if ev.RolledBack > 0 {
		s += fmt.Sprintf(" from v%d", ev.RolledBack)
	}
	if ev.Reason != "" {
		s += fmt.Sprintf(" (%s)", ev.Reason)
	}
	if ev.Op == EventDeprecate {
		s += fmt.Sprintf(" %q", ev.Message)
	}
	if ev.At.IsZero() {
		s += " (no time)"
	}
	e.got = append(e.got, s)
}

func (e *events) take() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := strings.Join(e.got, "; ")
	e.got = nil
	return out
}

// Each change this instance makes is told once, after it is durable: a
// new id is a register, new content a version, the same content again
// nothing, a label move (not a no-op move), a rollback that made a
// version, a yank and an unyank (not a repeated one), a deprecation set
// and removed, an unregister; prompts and changes applied from elsewhere
// (another catalog source) are not.
func TestEventsOfTheChangesThisInstanceMakes(t *testing.T) {
	l := newLocal(t)
	ev := &events{}
	cancel := l.OnEvent(ev.add)
	ctx := context.Background()
	mustRegister(t, l, "team/deploy", "# v1\n")
	mustRegister(t, l, "team/deploy", "# v2\n")
	mustRegister(t, l, "team/deploy", "# v2\n") // unchanged
	if _, err := l.Label(ctx, Operator(), KindSkill, LabelInput{ID: "team/deploy", Label: "prod", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Label(ctx, Operator(), KindSkill, LabelInput{ID: "team/deploy", Label: "prod", Version: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rollback(ctx, Operator(), KindSkill, RollbackInput{ID: "team/deploy", Version: "1", Meta: history.Meta{Author: "ops"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Yank(ctx, Operator(), KindSkill, YankInput{ID: "team/deploy", Version: "2", Reason: "leaks a token"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Yank(ctx, Operator(), KindSkill, YankInput{ID: "team/deploy", Version: "2", Reason: "leaks a token"}); err != nil {
		t.Fatal(err) // yanked already: no event
	}
	if _, err := l.Unyank(ctx, Operator(), KindSkill, YankInput{ID: "team/deploy", Version: "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deprecate(ctx, Operator(), KindSkill, DeprecateInput{ID: "team/deploy", Message: "use team/ship"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deprecate(ctx, Operator(), KindSkill, DeprecateInput{ID: "team/deploy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RegisterPrompt(ctx, Caller{}, registry.RegisterPromptInput{Name: "greet", Description: "Greet", FunctionID: "greet::render"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Deprecate(ctx, Operator(), KindPrompt, DeprecateInput{ID: "greet", Message: "use hello"}); err != nil {
		t.Fatal(err) // a prompt's: not a skill change
	}
	src, err := l.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(folderSkill("docs/intro", "# Intro\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.UnregisterSkill(ctx, Operator(), "team/deploy"); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, l, "team/deploy", "# v3\n") // back: a register, its next version
	want := "register team/deploy v1; version team/deploy v2; label team/deploy v1 prod (was 0); rollback team/deploy v3 from v1; " +
		"yank team/deploy v2 (leaks a token); unyank team/deploy v2; deprecate team/deploy \"use team/ship\"; deprecate team/deploy \"\"; " +
		"unregister team/deploy; register team/deploy v4"
	if got := ev.take(); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	cancel()
	mustRegister(t, l, "team/other", "# other\n")
	if got := ev.take(); got != "" {
		t.Fatalf("events after cancel: %s", got)
	}
}

// skills::usage and skills::changes arguments: one wording, every bad
// input named.
func TestUsageAndChangesArguments(t *testing.T) {
	in, err := DecodeUsageInput("skills::usage", []byte(`{"id":"team/deploy","since":"2026-11-01","limit":5,"_caller_worker_id":"w"}`))
	if err != nil || in.ID != "team/deploy" || in.Since.Format("2006-01-02") != "2026-11-01" || in.Limit != 5 {
		t.Fatalf("%+v %v", in, err)
	}
	if in, err := DecodeUsageInput("skills::usage", []byte(`{"id":"prompt:greet","since":"2026-11-01T10:00:00Z"}`)); err != nil || in.ID != "prompt:greet" {
		t.Fatalf("%+v %v", in, err)
	}
	if in, err := DecodeUsageInput("skills::usage", nil); err != nil || in.Limit != DefaultUsageLimit {
		t.Fatalf("no arguments: %+v %v; want the default limit", in, err)
	}
	if in, err := DecodeUsageInput("skills::usage", []byte(`{"id":"a"}`)); err != nil || in.Limit != 0 {
		t.Fatalf("an id: %+v %v; want every version", in, err)
	}
	if in, err := DecodeChangesInput("skills::changes", nil); err != nil || in.After != 0 || in.Limit != DefaultChangesLimit {
		t.Fatalf("%+v %v", in, err)
	}
	for _, c := range []struct{ fn, payload, want string }{
		{"skills::usage", `{"id":"Team"}`, `skills::usage: id "Team" is not a skill id`},
		{"skills::usage", `{"since":"yesterday"}`, `skills::usage: since must be a date ("2026-11-28") or an RFC 3339 time`},
		{"skills::usage", `{"limit":0}`, `skills::usage: limit must be an integer from 1 to 10000, got 0`},
		{"skills::usage", `{"ids":[]}`, `skills::usage: unknown field "ids" (expected id, since, limit)`},
		{"skills::usage", `[]`, `skills::usage: input must be a JSON object`},
		{"skills::changes", `{"after":-1}`, `skills::changes: after must be an integer from 0 to`},
		{"skills::changes", `{"limit":5000}`, `skills::changes: limit must be an integer from 1 to 1000, got 5000`},
		{"skills::changes", `{"after":"3"}`, `skills::changes: after must be an integer`},
	} {
		var err error
		if c.fn == "skills::usage" {
			_, err = DecodeUsageInput(c.fn, []byte(c.payload))
		} else {
			_, err = DecodeChangesInput(c.fn, []byte(c.payload))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v; want %q", c.fn, c.payload, err, c.want)
		}
	}
}
