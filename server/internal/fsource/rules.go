package fsource

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
)

// Limits and fixed names of the folder layout.
const (
	// MaxFileBytes caps a skill or prompt markdown file, frontmatter
	// included (iii-directory's 256 KiB).
	MaxFileBytes = 262144
	// MaxSkillFiles and MaxSkillBytes cap an Agent Skills folder or bundle
	// (the MCP Skills extension's limits: 512 files, 16 MiB in total).
	MaxSkillFiles = 512
	MaxSkillBytes = 16 << 20

	// SkillFile marks an Agent Skills folder; BundleManifest a Skills
	// Protocol bundle; PromptsDir a path component that makes .md files
	// prompts.
	SkillFile      = "SKILL.md"
	BundleManifest = "skill.toml"
	PromptsDir     = "prompts"

	// Agent Skills frontmatter limits.
	maxSkillNameChars     = 64
	maxSkillDescChars     = 1024
	maxCompatibilityChars = 500
)

// Skip reasons with exact iii-directory wording where it has one.
const (
	fmtInvalidID        = "invalid id %s: %v"
	fmtDuplicateID      = "duplicate id %s also produced by %s"
	fmtDuplicateName    = "duplicate name %s also produced by %s"
	fmtInvalidPrompt    = "invalid prompt name %s: %v"
	msgNoFrontmatter    = "missing YAML frontmatter (expected --- ... --- block at file start)"
	msgNoPromptDesc     = "frontmatter missing non-empty `description`"
	fmtTooLarge         = "file is too large (%d bytes; max %d)"
	msgEmptyBody        = "file has empty body"
	msgFolderMissing    = "folder does not exist"
	msgSymlinkDir       = "symlinked directory is not followed"
	msgNotRegular       = "not a regular file"
	fmtEscapes          = "path escapes the folder: %v"
	fmtUnreadable       = "unreadable: %v"
	fmtTooManyFiles     = "skill has too many files (more than %d)"
	fmtSkillTooLarge    = "skill files are too large (more than %d bytes in total)"
	msgNoBundleReader   = "Skills Protocol bundle (skill.toml) is not served: no bundle reader is configured"
	fmtBundleRejected   = "Skills Protocol bundle rejected: %v"
	fmtReadErr          = "read %s: %w"
	fmtReadTooLarge     = "file %s is too large (%d bytes; max %d)"
	fmtReadEmpty        = "file %s has empty body"
	msgAgentNameMissing = "frontmatter missing `name` (Agent Skills: required, 1-64 characters)"

	// Warnings: served all the same.
	fmtMetadataNotMap = "frontmatter `metadata` should be a map of strings (Agent Skills), got %s; served as it is"
	fmtMetadataValue  = "frontmatter `metadata.%s` should be a string (Agent Skills: metadata maps strings to strings), got %s; served as it is"
)

// isIgnored reports names that are never served and never reported:
// hidden files and folders (".git", ".draft.md", Emacs ".#x.md" locks) and
// editors' temporary files ("x.md~", "x.swp", "#x.md#", vim's "4913",
// "x.md.tmp" of an atomic save).
func isIgnored(name string) bool {
	switch {
	case name == "", strings.HasPrefix(name, "."), strings.HasSuffix(name, "~"),
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"),
		name == "4913":
		return true
	}
	switch path.Ext(name) {
	case ".swp", ".swx", ".swo", ".tmp", ".part", ".crdownload":
		return true
	}
	return false
}

// isPromptPath reports whether a relative path has a component "prompts".
func isPromptPath(rel string) bool {
	for _, c := range strings.Split(path.Dir(rel), "/") {
		if c == PromptsDir {
			return true
		}
	}
	return false
}

// checkBody applies the empty-body rule: a body that is empty once
// leading and trailing '\n' are removed is refused.
func checkBody(body string) bool {
	return strings.Trim(body, "\n") != ""
}

// ValidateAgentSkill checks SKILL.md frontmatter against the Agent Skills
// specification: name (required, 1-64 chars of a-z 0-9 '-', no leading,
// trailing or doubled '-', equal to the folder name), description
// (required, 1-1024 chars), license (string), compatibility (1-500 chars),
// allowed-tools (a space-separated string or a list of strings). A broken
// one of these is err: the skill is not served. Other keys are allowed
// and kept.
//
// metadata should be a map of string keys to string values; a value that
// is not (null, a number, a map) is returned in warnings and the skill is
// served all the same: the spec's own validator (skills-ref validate)
// does not check metadata values and turns them into strings, and harnesses
// such as Claude Code load such skills, so refusing them would hide
// skills every other client serves.
func ValidateAgentSkill(fm catalog.Map, dirName string) (warnings []string, err error) {
	raw, ok := fm.Get("name")
	if !ok {
		return nil, fmt.Errorf("%s", msgAgentNameMissing)
	}
	name, ok := raw.(string)
	if !ok {
		return nil, fmt.Errorf("frontmatter `name` must be a string, got %s", yamlType(raw))
	}
	if err := ValidateSkillName(name); err != nil {
		return nil, err
	}
	if name != dirName {
		return nil, fmt.Errorf("frontmatter name %s must equal the folder name %s", rules.RustQuote(name), rules.RustQuote(dirName))
	}
	raw, ok = fm.Get("description")
	if !ok {
		return nil, fmt.Errorf("frontmatter missing `description` (Agent Skills: required, 1-%d characters)", maxSkillDescChars)
	}
	desc, ok := raw.(string)
	if !ok {
		return nil, fmt.Errorf("frontmatter `description` must be a string, got %s", yamlType(raw))
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(desc)); n == 0 || utf8.RuneCountInString(desc) > maxSkillDescChars {
		return nil, fmt.Errorf("frontmatter `description` must be 1-%d characters, got %d", maxSkillDescChars, utf8.RuneCountInString(desc))
	}
	if raw, ok := fm.Get("license"); ok {
		if _, ok := raw.(string); !ok {
			return nil, fmt.Errorf("frontmatter `license` must be a string, got %s", yamlType(raw))
		}
	}
	if raw, ok := fm.Get("compatibility"); ok {
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("frontmatter `compatibility` must be a string, got %s", yamlType(raw))
		}
		if n := utf8.RuneCountInString(s); n == 0 || n > maxCompatibilityChars {
			return nil, fmt.Errorf("frontmatter `compatibility` must be 1-%d characters, got %d", maxCompatibilityChars, n)
		}
	}
	if raw, ok := fm.Get("allowed-tools"); ok {
		switch v := raw.(type) {
		case string:
		case []any:
			for i, t := range v {
				if _, ok := t.(string); !ok {
					return nil, fmt.Errorf("frontmatter `allowed-tools[%d]` must be a string, got %s", i, yamlType(t))
				}
			}
		default:
			return nil, fmt.Errorf("frontmatter `allowed-tools` must be a string or a list of strings, got %s", yamlType(raw))
		}
	}
	return metadataWarnings(fm), nil
}

// metadataWarnings lists what in the frontmatter's metadata is not the
// map of string keys to string values the Agent Skills specification
// describes, one message per value.
func metadataWarnings(fm catalog.Map) []string {
	raw, ok := fm.Get("metadata")
	if !ok {
		return nil
	}
	m, ok := raw.(catalog.Map)
	if !ok {
		return []string{fmt.Sprintf(fmtMetadataNotMap, yamlType(raw))}
	}
	var out []string
	for _, f := range m {
		if _, ok := f.Value.(string); !ok {
			out = append(out, fmt.Sprintf(fmtMetadataValue, f.Key, yamlType(f.Value)))
		}
	}
	return out
}

// ValidateSkillName applies the Agent Skills name rules.
func ValidateSkillName(name string) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > maxSkillNameChars {
		return fmt.Errorf("frontmatter `name` must be 1-%d characters, got %d", maxSkillNameChars, n)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("frontmatter name %s may only contain lowercase letters, digits and '-'", rules.RustQuote(name))
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return fmt.Errorf("frontmatter name %s may not start or end with '-'", rules.RustQuote(name))
	}
	if strings.Contains(name, "--") {
		return fmt.Errorf("frontmatter name %s may not contain '--'", rules.RustQuote(name))
	}
	return nil
}

func yamlType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case catalog.Map:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
