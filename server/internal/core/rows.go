package core

import (
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/registry"
)

// appendSkillRow appends row as JSON: registry.StoredSkill's keys, in its
// field order. It is how the registry writes every skills row (the one
// reader is registry.DecodeStoredSkill); encoding/json would escape the
// body for HTML, which serde_json does not do either.
func appendSkillRow(b []byte, row registry.StoredSkill) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, row.ID)
	b = append(b, `,"registered_at":`...)
	b = wire.AppendJSONString(b, row.RegisteredAt)
	b = append(b, `,"skill":`...)
	b = wire.AppendJSONString(b, row.Skill)
	return append(b, '}')
}
