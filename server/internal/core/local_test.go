package core

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newLocal is a registry on a store of this process nobody shares, loaded
// and running until the test ends. Its client never connects: nothing
// here reads a section or renders a prompt.
func newLocal(t *testing.T) *Local {
	t.Helper()
	st := store.OpenMemory()
	t.Cleanup(func() { _ = st.Close() })
	client := iii.New("ws://127.0.0.1:1", iii.WithLogger(quiet))
	l := New(client, DefaultConfig(), Options{State: kv.Local(st), Logger: quiet})
	t.Cleanup(l.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l.Start(ctx)
	if !l.Loaded() {
		t.Fatal("the registry did not load")
	}
	return l
}

func mustRegister(t *testing.T, l *Local, id, body string) {
	t.Helper()
	if _, err := l.RegisterSkill(context.Background(), Caller{}, registry.RegisterSkillInput{ID: id, Skill: body}); err != nil {
		t.Fatal(err)
	}
}

func fetch(l *Local, uris ...string) (string, error) {
	if len(uris) == 1 {
		return l.Fetch(context.Background(), registry.FetchInput{URI: &uris[0]})
	}
	return l.Fetch(context.Background(), registry.FetchInput{URIs: uris})
}

// folderSkill builds a skill as a skills folder would.
func folderSkill(id, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Kind: catalog.KindInstruction, Body: catalog.Inline(body),
		Origin: catalog.Origin{Kind: catalog.OriginFolder, Source: "/srv/skills", Path: id + ".md"}}
	e.SetSummary(body)
	return e
}

// Entries of another catalog source are served beside published skills,
// lose to them at the same id, and are still served (from state plus the
// other source) while the published mirror is not loaded.
func TestOtherSourcesBesidePublished(t *testing.T) {
	l := newLocal(t)
	src, err := l.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(folderSkill("docs/intro", "# Intro\n\nFrom a folder.\n"), folderSkill("both", "# Folder both\n")); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, l, "both", "# Published both\n")
	mustRegister(t, l, "pub", "# Pub\n")

	list := func() string {
		t.Helper()
		out, err := l.ListSkills(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(out)
		return string(raw)
	}
	check := func(label string) {
		t.Helper()
		got, err := fetch(l, "both", "docs/intro", "pub")
		want := "# iii://both\n\n# Published both\n\n---\n\n# iii://docs/intro\n\n# Intro\n\nFrom a folder.\n\n---\n\n# iii://pub\n\n# Pub"
		if err != nil || got != want {
			t.Fatalf("%s: fetch\n%q (%v)\nwant\n%q", label, got, err, want)
		}
		index, _ := fetch(l, "iii://skills")
		if !strings.Contains(index, "- [`both`](iii://both) — Published both\n  - [`docs/intro`](iii://docs/intro) — Intro — From a folder.\n- [`pub`](iii://pub) — Pub") {
			t.Fatalf("%s: index %q", label, index)
		}
		if raw := list(); !strings.Contains(raw, `{"bytes":24,"id":"docs/intro","origin":{"kind":"folder","path":"docs/intro.md","source":"skills"},"registered_at":""`) {
			t.Fatalf("%s: list %s", label, raw)
		}
	}
	check("loaded")
	l.skills.Invalidate()
	check("not loaded")

	// A published-only listing keeps v0.2.2's exact rows.
	src.Remove("docs/intro", "both")
	if err := l.Cluster().Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows registry.SkillList
	raw := list()
	if err := json.Unmarshal([]byte(raw), &rows); err != nil || strings.Contains(raw, "origin") || strings.Contains(raw, "shadows") || len(rows.Skills) != 2 {
		t.Fatalf("published-only list %s", raw)
	}
}

// On a store nobody else shares (the standalone process) published bodies
// stay in the store: the catalog holds none, reads fetch the current row,
// and a skill read again is served from the hot bodies.
func TestPublishedBodiesStayInTheStore(t *testing.T) {
	l := newLocal(t)
	mustRegister(t, l, "stored/one", "# One\n\nFirst body.\n")
	e, ok := l.Catalog().Get("stored/one")
	if !ok {
		t.Fatal("stored/one is not in the catalog")
	}
	if e.Body.InMemory() {
		t.Fatal("the published body is held in memory; want it read from the store")
	}
	if e.Title != "One" || e.Description != "First body." {
		t.Fatalf("summary %q / %q", e.Title, e.Description)
	}
	for range 3 { // the index takes the first read; the second store read keeps it hot
		if got, err := fetch(l, "iii://stored/one"); err != nil || !strings.Contains(got, "First body.") {
			t.Fatalf("fetch: %q, %v", got, err)
		}
	}
	if !l.skills.Hot("stored/one", e.BodyDigest) {
		t.Fatal("a skill read again is not kept hot")
	}

	mustRegister(t, l, "stored/one", "# One\n\nSecond body.\n")
	if got, err := fetch(l, "iii://stored/one"); err != nil || !strings.Contains(got, "Second body.") {
		t.Fatalf("fetch after a new version: %q, %v", got, err)
	}
	if _, err := l.UnregisterSkill(context.Background(), Caller{}, "stored/one"); err != nil {
		t.Fatal(err)
	}
	if got, err := fetch(l, "iii://stored/one"); err == nil {
		t.Fatalf("fetch after unregister answered %q", got)
	}
	if l.skills.Hot("stored/one", e.BodyDigest) {
		t.Fatal("an unregistered skill's body is still kept hot")
	}

	// A restart loads every row without holding a body.
	mustRegister(t, l, "stored/two", "# Two\n\nKept in the store.\n")
	if err := l.Cluster().Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e, ok := l.Catalog().Get("stored/two"); !ok || e.Body.InMemory() {
		t.Fatalf("after a reload stored/two is %+v (ok %v); want its body in the store", e, ok)
	}
	if got, err := fetch(l, "iii://stored/two"); err != nil || !strings.Contains(got, "Kept in the store.") {
		t.Fatalf("fetch after a reload: %q, %v", got, err)
	}
}
