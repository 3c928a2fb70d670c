package skillsync

import (
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// SkillFile is the file every Agent Skills folder has at its root.
const SkillFile = skillsext.FileName

// Limits of one synced skill: the MCP Skills extension's (512 files,
// 16 MiB), and a path length every file system takes.
const (
	MaxFiles     = skillsext.MaxFiles
	MaxBytes     = skillsext.MaxBytes
	maxPathBytes = 1024
)

// checkName applies the Agent Skills name rules, which also make the name
// a safe folder name: 1-64 lowercase letters, digits and single hyphens,
// not first or last.
func checkName(name string) error {
	bad := len(name) == 0 || len(name) > 64 || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--")
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("name %q is not a valid folder name: the Agent Skills specification wants 1-64 lowercase letters, digits and single hyphens, not first or last", clip(name, 80))
	}
	return nil
}

// checkFilePath refuses a file path that could leave the skill folder or
// that a file system cannot hold: relative, '/'-separated, no empty, "."
// or ".." segment, no NUL or backslash, at most maxPathBytes.
func checkFilePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("an empty file path")
	case len(p) > maxPathBytes:
		return fmt.Errorf("file path %q is longer than %d bytes", clip(p, 80), maxPathBytes)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("file path %q is absolute; expected a path relative to the skill folder", clip(p, 80))
	case strings.ContainsAny(p, "\x00\\"):
		return fmt.Errorf("file path %q holds a NUL or a backslash", clip(p, 80))
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("file path %q has an empty, \".\" or \"..\" segment; expected a path inside the skill folder", clip(p, 80))
		}
	}
	return nil
}

// checkListed checks what a registry listed for one skill before anything
// is fetched or written: a valid id and folder name, SKILL.md, safe and
// distinct file paths (no file that is also a folder), well-formed
// digests, the extension's limits.
func checkListed(l Listed) error {
	if err := rules.ValidateID(l.ID); err != nil {
		return fmt.Errorf("the registry lists a skill with id %q: %v", clip(l.ID, 80), err)
	}
	if err := checkName(l.Name); err != nil {
		return fmt.Errorf("skill %s: %w", l.ID, err)
	}
	if l.Dynamic {
		return nil
	}
	if len(l.Files) > MaxFiles {
		return fmt.Errorf("skill %s lists %d files; at most %d are synced per skill", l.ID, len(l.Files), MaxFiles)
	}
	var total int64
	seen := make(map[string]bool, len(l.Files))
	hasSkillMD := false
	for _, f := range l.Files {
		if err := checkFilePath(f.Path); err != nil {
			return fmt.Errorf("skill %s: %w", l.ID, err)
		}
		if seen[f.Path] {
			return fmt.Errorf("skill %s lists file %s twice", l.ID, f.Path)
		}
		seen[f.Path] = true
		if !isHexDigest(f.SHA256) {
			return fmt.Errorf("skill %s: file %s has digest %q; expected 64 lowercase hex digits", l.ID, f.Path, clip(f.SHA256, 80))
		}
		if f.Size < 0 || f.Size > MaxBytes {
			return fmt.Errorf("skill %s: file %s has size %d; expected 0 to %d bytes", l.ID, f.Path, f.Size, MaxBytes)
		}
		total += f.Size
		hasSkillMD = hasSkillMD || f.Path == SkillFile
	}
	if !hasSkillMD {
		return fmt.Errorf("skill %s lists no %s", l.ID, SkillFile)
	}
	if total > MaxBytes {
		return fmt.Errorf("skill %s holds %d bytes; at most %d are synced per skill", l.ID, total, MaxBytes)
	}
	for p := range seen {
		for dir := p; ; {
			i := strings.LastIndexByte(dir, '/')
			if i < 0 {
				break
			}
			dir = dir[:i]
			if seen[dir] {
				return fmt.Errorf("skill %s lists %s both as a file and as the folder of %s", l.ID, dir, p)
			}
		}
	}
	return nil
}
