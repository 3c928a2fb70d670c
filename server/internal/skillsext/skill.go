package skillsext

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Skill is one skill as the extension serves it.
type Skill struct {
	// Path is the skill path (the catalog id, nesting kept): its SKILL.md
	// is skill://<Path>/SKILL.md.
	Path string `json:"path"`
	// Name and Description are the frontmatter's; Frontmatter is the whole
	// frontmatter as a JSON object, keys in file order.
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	// Files lists SKILL.md and every supporting file, sorted by path.
	Files []File `json:"files"`
	// Dynamic marks content rendered at request time (a published skill
	// linking to iii://fn/… sections): no stable digests are published.
	Dynamic bool `json:"dynamic,omitempty"`
	// Origin is where the skill comes from: "published" (skills::register),
	// "folder", "bundle" or "builtin" (catalog.OriginKind).
	Origin string `json:"origin,omitempty"`
	// Problem, when set, says why the skill is not served.
	Problem string `json:"problem,omitempty"`

	// The facts of the content served (ours, docs/trust.md; the MCP
	// server shows them in _meta as io.iii-skills/<name>). SHA256 is the
	// digest a pin @sha256:<hex> names: of the body for a published skill
	// (its registry version's sha256), of the Manifest for a skill with
	// files. Version, SignedBy, Key and Yanked are the registry version's
	// (published skills only): SignedBy is the trusted signer or null;
	// Key the signing key's fingerprint. Deprecated is the message of a
	// deprecated skill.
	Version    int             `json:"version,omitempty"`
	SHA256     string          `json:"sha256,omitempty"`
	SignedBy   json.RawMessage `json:"signed_by,omitempty"`
	Key        string          `json:"key,omitempty"`
	Yanked     string          `json:"yanked,omitempty"`
	Deprecated string          `json:"deprecated,omitempty"`
}

// Facts are the registry's facts of a version of a published skill.
type Facts struct {
	Version                           int
	SignedBy, Key, Yanked, Deprecated string
}

// apply sets f on s (a published skill: SignedBy is null when unsigned).
func (f Facts) apply(s *Skill) {
	s.Version, s.Key, s.Yanked, s.Deprecated = f.Version, f.Key, f.Yanked, f.Deprecated
	s.SignedBy = json.RawMessage("null")
	if f.SignedBy != "" {
		s.SignedBy, _ = json.Marshal(f.SignedBy)
	}
}

// File is one file of a skill.
type File struct {
	Path   string `json:"path"`   // relative to the skill root, '/'-separated
	Size   int64  `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // lowercase hex of the exact bytes served
	MIME   string `json:"mime"`
}

// FileName is the file every skill has at its root.
const FileName = "SKILL.md"

// Limits of the extension, per skill.
const (
	MaxFiles = 512
	MaxBytes = 16 << 20
)

// checkLimits is the diagnostic for files over the extension's limits.
func checkLimits(path string, files []File) string {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	switch {
	case len(files) > MaxFiles:
		return fmt.Sprintf("skill %s has %d files; the MCP Skills extension allows at most %d per skill", path, len(files), MaxFiles)
	case total > MaxBytes:
		return fmt.Sprintf("skill %s holds %d bytes; the MCP Skills extension allows at most 16 MiB (%d bytes) per skill", path, total, MaxBytes)
	}
	return ""
}

// checkName applies the Agent Skills name rules: 1-64 characters,
// lowercase letters, digits and hyphens, no hyphen first, last or doubled.
func checkName(name string) string {
	bad := len(name) == 0 || len(name) > 64 || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--")
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Sprintf("name %q is not a valid Agent Skills name (1-64 lowercase letters, digits and single hyphens, not first or last)", name)
	}
	return ""
}
