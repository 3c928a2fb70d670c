package core

import (
	"encoding/json"
	"testing"

	"github.com/iii-skills/skills/server/internal/registry"
)

// The hand-written skill row decodes to exactly the row json.Marshal
// would have stored, whatever the body holds.
func TestSkillRow(t *testing.T) {
	for _, body := range []string{"# A\n\nplain", "quotes \" and \\ backslashes\t<html>&amp;", "é 漢 \u2028 \x01 \xff bad utf-8", ""} {
		row := registry.StoredSkill{ID: "w/s\"1", RegisteredAt: "2026-01-02T03:04:05.123+00:00", Skill: body}
		var got struct {
			Value json.RawMessage
		}
		got.Value = appendSkillRow(nil, row)
		if !json.Valid(got.Value) {
			t.Fatalf("row %s is not JSON", got.Value)
		}
		want, _ := json.Marshal(row)
		var gotRow, wantRow registry.StoredSkill
		_ = json.Unmarshal(got.Value, &gotRow)
		_ = json.Unmarshal(want, &wantRow)
		if gotRow != wantRow {
			t.Errorf("row %s decodes to %+v, want %+v", got.Value, gotRow, wantRow)
		}
		if s, err := registry.DecodeStoredSkill(got.Value); err != nil || s != wantRow {
			t.Errorf("registry.DecodeStoredSkill(%s) = %+v, %v; want %+v", got.Value, s, err, wantRow)
		}
	}
}
