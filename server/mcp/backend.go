package mcp

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Backend is where the MCP server reads the skill catalog from: the
// skill:// surface (skills/list, skills/get, resources/directory/read,
// resources/read of skill:// URIs, the skill tools) answers from it alone.
//
// Two implementations exist: one reading the catalog in-process (the MCP
// server inside the `skills` process, standalone and worker mode) and one
// reading it over iii from the registry (`skills mcp`, a separate process).
// Digests come with the entries: a backend never hashes on the read path.
type Backend interface {
	// ListSkills returns up to limit skills (all when limit <= 0) whose
	// path sorts after `after` ("" = from the first), in path order, and
	// whether more follow.
	ListSkills(ctx context.Context, after string, limit int) (skills []SkillEntry, more bool, err error)
	// Skill returns the skill at path; ok is false when there is none.
	Skill(ctx context.Context, path string) (entry SkillEntry, ok bool, err error)
	// ReadFile returns one file of a skill: the exact bytes the entry's
	// digest covers. ErrNoSuchFile when the skill or file is unknown.
	ReadFile(ctx context.Context, path, file string) ([]byte, error)
	// Watch calls changed with the path of every skill that was added,
	// changed or removed, until ctx ends.
	Watch(ctx context.Context, changed func(path string)) error
}

// ErrNoSuchFile is returned by Backend.ReadFile for an unknown skill or file.
var ErrNoSuchFile = errors.New("no such skill file")

// SkillEntry is one skill as the MCP Skills extension serves it.
type SkillEntry struct {
	// Path is the skill path (the catalog id, nesting kept): the skill's
	// SKILL.md is skill://<Path>/SKILL.md.
	Path string `json:"path"`
	// Frontmatter is the SKILL.md frontmatter, verbatim; name and
	// description are always present.
	Frontmatter map[string]any `json:"frontmatter"`
	// Files lists SKILL.md and every supporting file (digests included).
	// Empty when Dynamic.
	Files []SkillFile `json:"files,omitempty"`
	// Dynamic marks a skill whose content is rendered at request time
	// (an iii skill linking to iii://fn/… sections): no stable digests.
	Dynamic bool `json:"dynamic,omitempty"`
	// Problem, when set, says why the skill is not served (it exceeds the
	// extension's limits); the entry is still answered by skills/get with
	// the diagnostic as an error.
	Problem string `json:"problem,omitempty"`
}

// SkillFile is one file of a skill.
type SkillFile struct {
	Path   string `json:"path"`   // relative to the skill root, "/"-separated
	Size   int64  `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // lowercase hex of the exact bytes served
	MIME   string `json:"mime"`
}

// Limits of the Skills extension, per skill.
const (
	MaxSkillFiles = 512
	MaxSkillBytes = 16 << 20
)

// CheckLimits returns the diagnostic for a skill over the extension's
// limits, or "".
func CheckLimits(skillPath string, files []SkillFile) string {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	switch {
	case len(files) > MaxSkillFiles:
		return fmt.Sprintf("skill %s has %d files; the MCP Skills extension allows at most %d per skill", skillPath, len(files), MaxSkillFiles)
	case total > MaxSkillBytes:
		return fmt.Sprintf("skill %s holds %d bytes; the MCP Skills extension allows at most 16 MiB (%d bytes) per skill", skillPath, total, MaxSkillBytes)
	}
	return ""
}

// SkillScheme prefixes every skill:// URI.
const SkillScheme = "skill://"

// SkillFileName is the file every skill has at its root.
const SkillFileName = "SKILL.md"

// SkillURI is the URI of a file of the skill at skillPath.
func SkillURI(skillPath, file string) string { return SkillScheme + skillPath + "/" + file }

// fileMIME is the MIME type of a supporting file named file when the
// backend gave none.
func fileMIME(file string) string {
	switch strings.ToLower(path.Ext(file)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt", "":
		return "text/plain"
	case ".json":
		return "application/json"
	case ".py":
		return "text/x-python"
	case ".sh":
		return "text/x-shellscript"
	case ".js", ".mjs":
		return "text/javascript"
	case ".ts":
		return "text/x-typescript"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".html":
		return "text/html"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".svg":
		return "image/svg+xml"
	case ".pdf":
		return "application/pdf"
	}
	return "application/octet-stream"
}
