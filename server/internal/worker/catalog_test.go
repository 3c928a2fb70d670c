package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// folderSkill builds a skill as a skills folder would.
func folderSkill(id, body string) *catalog.Entry {
	e := &catalog.Entry{ID: id, Kind: catalog.KindInstruction, Body: catalog.Inline(body),
		Origin: catalog.Origin{Kind: catalog.OriginFolder, Source: "/srv/skills", Path: id + ".md"}}
	e.SetSummary(body)
	return e
}

// TestOtherSourcesBesidePublished: entries of another catalog source are
// served beside published skills, lose to them at the same id, and are
// still served (from state plus the other source) while the published
// mirror is not loaded.
func TestOtherSourcesBesidePublished(t *testing.T) {
	s := startStack(t, t.TempDir())
	src, err := s.worker.Catalog().AddSource("folder:/srv/skills", catalog.RankFolder)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(folderSkill("docs/intro", "# Intro\n\nFrom a folder.\n"), folderSkill("both", "# Folder both\n")); err != nil {
		t.Fatal(err)
	}
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "both", "skill": "# Published both\n"}, nil)
	s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": "pub", "skill": "# Pub\n"}, nil)

	check := func(label string) {
		t.Helper()
		var got string
		s.mustCall(t, rules.FnSkillFetch, map[string]any{"uris": []string{"both", "docs/intro", "pub"}}, &got)
		want := "# iii://both\n\n# Published both\n\n---\n\n# iii://docs/intro\n\n# Intro\n\nFrom a folder.\n\n---\n\n# iii://pub\n\n# Pub"
		if got != want {
			t.Fatalf("%s: fetch\n%q\nwant\n%q", label, got, want)
		}
		var index string
		s.mustCall(t, rules.FnSkillFetch, map[string]any{"uri": "iii://skills"}, &index)
		if !strings.Contains(index, "- [`both`](iii://both) — Published both\n  - [`docs/intro`](iii://docs/intro) — Intro — From a folder.\n- [`pub`](iii://pub) — Pub") {
			t.Fatalf("%s: index %q", label, index)
		}
		raw, err := s.caller.Trigger(t.Context(), iii.TriggerRequest{FunctionID: rules.FnSkillsList, Data: json.RawMessage(`{}`), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `{"bytes":24,"id":"docs/intro","origin":{"kind":"folder","path":"docs/intro.md","source":"/srv/skills"},"registered_at":""`) {
			t.Fatalf("%s: list %s", label, raw)
		}
	}
	check("loaded")
	s.worker.skills.invalidate()
	check("not loaded")

	// A published-only listing keeps v0.2.2's exact rows.
	src.Remove("docs/intro", "both")
	if err := s.worker.cl.Relist(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list registry.SkillList
	s.mustCall(t, rules.FnSkillsList, map[string]any{}, &list)
	raw, _ := s.caller.Trigger(t.Context(), iii.TriggerRequest{FunctionID: rules.FnSkillsList, Data: json.RawMessage(`{}`), Timeout: 10 * time.Second})
	if strings.Contains(string(raw), "origin") || strings.Contains(string(raw), "shadows") || len(list.Skills) != 2 {
		t.Fatalf("published-only list %s", raw)
	}
}
