package worker

import (
	"encoding/json"
	"testing"

	"github.com/iii-skills/skills/server/internal/registry"
)

// The hand-written state::set payload of a skill decodes to exactly the row
// json.Marshal would have stored, whatever the body holds.
func TestSkillSetPayload(t *testing.T) {
	for _, body := range []string{"# A\n\nplain", "quotes \" and \\ backslashes\t<html>&amp;", "é 漢 \u2028 \x01 \xff bad utf-8", ""} {
		row := registry.StoredSkill{ID: "w/s\"1", RegisteredAt: "2026-01-02T03:04:05.123+00:00", Skill: body}
		raw := skillSetPayload("skills", row)
		var got struct {
			Scope string
			Key   string
			Value json.RawMessage
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("payload %s is not JSON: %v", raw, err)
		}
		want, _ := json.Marshal(row)
		var gotRow, wantRow registry.StoredSkill
		_ = json.Unmarshal(got.Value, &gotRow)
		_ = json.Unmarshal(want, &wantRow)
		if got.Scope != "skills" || got.Key != row.ID || gotRow != wantRow {
			t.Errorf("payload %s decodes to %+v / %+v, want scope skills, key %q, row %+v", raw, got, gotRow, row.ID, wantRow)
		}
		if s, err := registry.DecodeStoredSkill(got.Value); err != nil || s != wantRow {
			t.Errorf("registry.DecodeStoredSkill(%s) = %+v, %v; want %+v", got.Value, s, err, wantRow)
		}
	}
}
