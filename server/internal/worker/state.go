package worker

import (
	"github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/registry"
)

// appendSkillRow appends row as JSON: registry.StoredSkill's keys, in its
// field order.
func appendSkillRow(b []byte, row registry.StoredSkill) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendJSONString(b, row.ID)
	b = append(b, `,"registered_at":`...)
	b = wire.AppendJSONString(b, row.RegisteredAt)
	b = append(b, `,"skill":`...)
	b = wire.AppendJSONString(b, row.Skill)
	return append(b, '}')
}

// sdkError renders an iii client error the way upstream's Rust SDK
// displays it, because upstream messages embed that text ("trigger x:
// remote error (function_not_found): Function x not found").
var sdkError = iii.RustDisplay
