package mcp

import (
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// SkillScheme prefixes every skill:// URI.
const SkillScheme = registry.SkillScheme

// SkillURI is the URI of a file of the skill at skillPath, percent-encoded
// (registry.SkillFileURI): reads decode it once (registry.ParseSkillURI).
func SkillURI(skillPath, file string) string { return registry.SkillFileURI(skillPath, file) }

// SkillFileName is the file every skill has at its root.
const SkillFileName = skillsext.FileName

// sectionPrefix starts a section URI: reading it runs a publisher's
// handler (iii://fn/a/b → a::b).
const sectionPrefix = registry.Scheme + "fn/"
