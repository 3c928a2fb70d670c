package mcp

import (
	"context"

	"github.com/iii-skills/skills/server/internal/skillsext"
)

// Backend is where the MCP server reads the skill catalog from: the
// skill:// surface (skills/list, skills/get, resources/directory/read,
// resources/read of skill:// URIs, the skill tools) answers from it alone.
//
// Two implementations exist: skillsext.View reads the catalog in-process
// (the MCP server inside the `skills` process, standalone and worker mode)
// and skillsext.Remote reads it over iii from the registry (`skills mcp`, a
// separate process). Digests come with the entries, computed once per
// change of a skill (a published skill's on first use after it): a read
// only looks them up.
type Backend interface {
	// ListSkills returns up to limit skills (all when limit <= 0) whose
	// path sorts after `after` ("" = from the first), in path order, and
	// whether more follow.
	ListSkills(ctx context.Context, after string, limit int) (skills []SkillEntry, more bool, err error)
	// Skill returns the skill at path; ok is false when there is none.
	Skill(ctx context.Context, path string) (entry SkillEntry, ok bool, err error)
	// ReadFile returns one file of a skill: the exact bytes the entry's
	// digest covers; skillsext.ErrNoSuchFile for an unknown skill or file.
	ReadFile(ctx context.Context, path, file string) ([]byte, error)
	// Watch calls changed with the path of every skill that was added,
	// changed or removed, from the moment it returns until stop is called
	// or ctx ends. It returns once the watch is in place, so a listing read
	// afterwards misses no change.
	Watch(ctx context.Context, changed func(path string)) (stop func(), err error)
}

// SkillEntry is one skill as the MCP Skills extension serves it.
type SkillEntry = skillsext.Skill

// SkillScheme prefixes every skill:// URI.
const SkillScheme = "skill://"

// SkillFileName is the file every skill has at its root.
const SkillFileName = skillsext.FileName

// SkillURI is the URI of a file of the skill at skillPath.
func SkillURI(skillPath, file string) string { return SkillScheme + skillPath + "/" + file }
