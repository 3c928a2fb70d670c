package fsource

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
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
	fmtInvalidID      = "invalid id %s: %v"
	fmtDuplicateID    = "duplicate id %s also produced by %s"
	fmtDuplicateName  = "duplicate name %s also produced by %s"
	fmtInvalidPrompt  = "invalid prompt name %s: %v"
	msgNoFrontmatter  = "missing YAML frontmatter (expected --- ... --- block at file start)"
	msgNoPromptDesc   = "frontmatter missing non-empty `description`"
	fmtTooLarge       = "file is too large (%d bytes; max %d)"
	msgEmptyBody      = "file has empty body"
	msgFolderMissing  = "folder does not exist"
	msgSymlinkDir     = "symlinked directory is not followed"
	msgNotRegular     = "not a regular file"
	fmtEscapes        = "path escapes the folder: %v"
	fmtUnreadable     = "unreadable: %v"
	fmtTooManyFiles   = "skill has too many files (more than %d)"
	fmtSkillTooLarge  = "skill files are too large (more than %d bytes in total)"
	msgNoBundleReader = "Skills Protocol bundle (skill.toml) is not served: no bundle reader is configured"
	fmtBundleRejected = "Skills Protocol bundle rejected: %v"
	fmtReadErr        = "read %s: %w"
	fmtReadTooLarge   = "file %s is too large (%d bytes; max %d)"
	fmtReadEmpty      = "file %s has empty body"
	fmtRootSkillFile  = "%s at the root of a skills folder is not served: a skills folder holds skills, each in a folder of its own named after the skill (serve the folder above this one, or move the file to <name>/SKILL.md)"

	// Warnings: served all the same.
	fmtMetadataNotMap = "frontmatter `metadata` should be a map of strings (Agent Skills), got %s; served as it is"
	fmtMetadataValue  = "frontmatter `metadata.%s` should be a string (Agent Skills: metadata maps strings to strings), got %s; served as it is"
	fmtSkillFileCase  = "the skill file is named %s, expected SKILL.md (Agent Skills); served as this skill's SKILL.md, but a harness that looks for SKILL.md on a case-sensitive file system does not find it: rename it to SKILL.md"
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

// Ignored reports a name (one path component) that folders never serve
// nor report: what a copy of a skills folder may leave out unread.
func Ignored(name string) bool { return isIgnored(name) }

// isSkillFileName reports whether name is SKILL.md in any letter case:
// the skills-ref validators accept skill.md beside SKILL.md, and on a
// case-insensitive file system (macOS, Windows) harnesses find either.
func isSkillFileName(name string) bool { return strings.EqualFold(name, SkillFile) }

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

// AgentSkillsFields are the top-level frontmatter keys the Agent Skills
// specification defines, in its order. Other keys are served as they are
// (harnesses read their own, such as Claude Code's argument-hint);
// `skills check` names them.
var AgentSkillsFields = []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

// ValidateAgentSkill checks SKILL.md frontmatter against the Agent Skills
// specification: name (required, 1-64 chars of a-z 0-9 '-', no leading,
// trailing or doubled '-', equal to the folder name), description
// (required, 1-1024 chars, not only whitespace), license (string),
// compatibility (1-500 chars), allowed-tools (a space-separated string or
// a list of strings). A broken one of these is err: the skill is not
// served. Other keys are allowed and kept.
//
// metadata should be a map of string keys to string values; a value that
// is not (null, a number, a map) is returned in warnings and the skill is
// served all the same: the spec's own validator (skills-ref validate)
// does not check metadata values and turns them into strings, and harnesses
// such as Claude Code load such skills, so refusing them would hide
// skills every other client serves.
//
// Every message names what was found and what was expected.
func ValidateAgentSkill(fm catalog.Map, dirName string) (warnings []string, err error) {
	raw, ok := fm.Get("name")
	if !ok {
		return nil, fmt.Errorf("frontmatter missing `name`: expected `name: %s` (Agent Skills: required, equal to the folder name)", dirName)
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
		return nil, fmt.Errorf("frontmatter missing `description`: expected 1-%d characters saying what the skill does and when to use it (Agent Skills: required)", maxSkillDescChars)
	}
	desc, ok := raw.(string)
	if !ok {
		return nil, fmt.Errorf("frontmatter `description` must be a string, got %s", yamlType(raw))
	}
	if got := textLength(desc, maxSkillDescChars); got != "" {
		return nil, fmt.Errorf("frontmatter `description` must be 1-%d characters of text, got %s", maxSkillDescChars, got)
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
			return nil, fmt.Errorf("frontmatter `compatibility` must be 1-%d characters, got %s", maxCompatibilityChars, charCount(s))
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

// textLength says what is wrong with s as 1-max characters of text ("an
// empty string", "only whitespace (3 characters)", "1025 characters"), or
// "" when nothing is.
func textLength(s string, max int) string {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return "an empty string"
	case strings.TrimSpace(s) == "":
		return "only whitespace (" + charCount(s) + ")"
	case n > max:
		return charCount(s)
	}
	return ""
}

// charCount is "1 character", "n characters", or "an empty string".
func charCount(s string) string {
	switch n := utf8.RuneCountInString(s); n {
	case 0:
		return "an empty string"
	case 1:
		return "1 character"
	default:
		return fmt.Sprintf("%d characters", n)
	}
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

// ValidateSkillName applies the Agent Skills name rules to a frontmatter
// name.
func ValidateSkillName(name string) error {
	if n := utf8.RuneCountInString(name); n == 0 || n > maxSkillNameChars {
		return fmt.Errorf("frontmatter `name` must be 1-%d characters, got %s", maxSkillNameChars, charCount(name))
	}
	if p := nameProblem(name); p != "" {
		return fmt.Errorf("frontmatter name %s %s", rules.RustQuote(name), p)
	}
	return nil
}

// validateFolderName applies the Agent Skills name rules to the folder
// of a SKILL.md: its name is the skill's name, so the stricter Agent
// Skills rule is the one to meet (the iii id rule would also let '_'
// through, which the frontmatter name then may not have).
func validateFolderName(dir string) error {
	n := utf8.RuneCountInString(dir)
	p := nameProblem(dir)
	if n > maxSkillNameChars {
		p = fmt.Sprintf("must be 1-%d characters, got %s", maxSkillNameChars, charCount(dir))
		if s := suggestName(dir); s != "" {
			p += fmt.Sprintf(" (for example %s)", rules.RustQuote(s))
		}
	}
	if p == "" {
		return nil
	}
	return fmt.Errorf("folder name %s %s; a folder holding SKILL.md is named after its skill, as its frontmatter `name` is", rules.RustQuote(dir), p)
}

// nameProblem says what is wrong with a 1-64 character name under the
// Agent Skills rules (lowercase a-z, digits, single '-' inside) and gives
// a name that would pass; "" when nothing is.
func nameProblem(name string) string {
	var bad []string
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			if q := fmt.Sprintf("%q", r); !slices.Contains(bad, q) {
				bad = append(bad, q)
			}
		}
	}
	var p string
	switch {
	case len(bad) > 0:
		p = "must be lowercase letters a-z, digits and '-' only, got " + listOf(bad)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		p = "must not start or end with '-'"
	case strings.Contains(name, "--"):
		p = "must not contain '--'"
	default:
		return ""
	}
	if s := suggestName(name); s != "" && !hasNonASCIILetter(name) {
		p += fmt.Sprintf(" (Agent Skills names; for example %s)", rules.RustQuote(s))
	} else {
		p += " (Agent Skills names)"
	}
	return p
}

// hasNonASCIILetter: suggestName would drop such a letter ("pdé" → "pd"),
// so no example is offered.
func hasNonASCIILetter(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII && unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// listOf joins items as "a", "a and b", "a, b and c".
func listOf(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// suggestName turns name into one the Agent Skills rules accept
// ("My_Skill" → "my-skill", "parseHTTPReply" → "parse-httpreply"): lower
// case, a '-' at every run of other characters and where a lowercase
// letter or digit meets an uppercase one; "" when nothing is left.
func suggestName(name string) string {
	var b strings.Builder
	dash, prevLower := false, false
	for _, r := range name {
		lower := unicode.ToLower(r)
		switch {
		case lower >= 'a' && lower <= 'z' || r >= '0' && r <= '9':
			if unicode.IsUpper(r) && prevLower && !dash {
				b.WriteByte('-')
			}
			b.WriteRune(lower)
			dash, prevLower = false, r == lower
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash, prevLower = true, false
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if len(out) > maxSkillNameChars {
		out = strings.TrimRight(out[:maxSkillNameChars], "-")
	}
	return out
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
