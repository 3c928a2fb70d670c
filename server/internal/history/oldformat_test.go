package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/store"
)

// testdata/state-before-kv.db is the state file of a `skills --standalone`
// built before history wrote the registry's timestamps (commit 1399c68):
// skill old/doc with versions 1 ("first", by ann, labelled stable) and 2,
// prompt old-prompt with versions 1 and 2. It keeps working: its versions
// list, read and take new versions after them.
func TestStoreWrittenInTheOldFormat(t *testing.T) {
	raw, err := os.ReadFile("testdata/state-before-kv.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	skills := New(kv.Local(st), Config{Scope: "skills", Noun: "skill"})
	l, err := skills.Versions("old/doc")
	if err != nil {
		t.Fatal(err)
	}
	if l.Latest != 2 || len(l.Versions) != 2 || l.Labels["stable"] != 1 {
		t.Fatalf("old/doc listing: %+v", l)
	}
	v1 := l.Versions[1]
	if v1.Version != 1 || v1.Message != "first" || v1.Author != "ann" || v1.Bytes != len("# Old doc\n\nfirst body\n") {
		t.Fatalf("old/doc version 1: %+v", v1)
	}
	for _, v := range l.Versions {
		at, err := time.Parse(time.RFC3339Nano, v.RegisteredAt)
		if err != nil || registry.Timestamp(at) != v.RegisteredAt {
			t.Fatalf("registered_at %q is not in the registry's format (%v)", v.RegisteredAt, err)
		}
	}
	if body, p, err := skills.Select("old/doc", "stable"); err != nil || p.Version != 1 || body != "# Old doc\n\nfirst body\n" {
		t.Fatalf("old/doc@stable: %q %d %v", body, p.Version, err)
	}
	v, created, err := skills.Record("old/doc", "# Old doc\n\nthird body\n", Meta{}, nil)
	if err != nil || !created || v.Version != 3 {
		t.Fatalf("a new version after the old ones: %+v %v %v", v, created, err)
	}
	prompts := New(kv.Local(st), Config{Scope: "prompts", Noun: "prompt"})
	if c, err := prompts.Content("old-prompt", 2); err != nil || !strings.Contains(c, "an old prompt, v2") {
		t.Fatalf("old-prompt@2: %q %v", c, err)
	}
}

// A row stored with nine fraction digits whatever the time reads as the
// same instant, rendered as the registry renders registered_at.
func TestOldTimestampsReadInTheRegistryFormat(t *testing.T) {
	for stored, want := range map[string]string{
		"2026-03-04T05:06:07.100000000+00:00": "2026-03-04T05:06:07.100+00:00",
		"2026-03-04T05:06:07.000000000+00:00": "2026-03-04T05:06:07+00:00",
		"2026-03-04T05:06:07.123456789+00:00": "2026-03-04T05:06:07.123456789+00:00",
		"2026-03-04T05:06:07.120+00:00":       "2026-03-04T05:06:07.120+00:00",
		"not a time":                          "not a time",
	} {
		if got := registeredAt(stored); got != want {
			t.Errorf("registeredAt(%q) = %q, want %q", stored, got, want)
		}
	}
	h, st := newMem(t, Config{})
	mustRecord(t, h, "a", "one")
	// Rewrite the row as history wrote it before.
	key := keyOf(h, "a", 1)
	raw, _, _ := st.Get("skills.versions", key)
	old := strings.Replace(string(raw), `"registered_at":"`, `"registered_at":"2026-03-04T05:06:07.100000000+00:00","was":"`, 1)
	if _, err := st.Set("skills.versions", key, []byte(old)); err != nil {
		t.Fatal(err)
	}
	l, err := h.Versions("a")
	if err != nil || l.Versions[0].RegisteredAt != "2026-03-04T05:06:07.100+00:00" {
		t.Fatalf("listing of an old row: %+v %v", l, err)
	}
}
