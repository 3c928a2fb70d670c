package skillsprotocol

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// Kinds of skill.
const (
	KindAction      = "action"
	KindInstruction = "instruction"
)

// Manifest is a validated skill.toml.
type Manifest struct {
	Name        string         `json:"name" toml:"name"`
	Version     string         `json:"version" toml:"version"`
	Description string         `json:"description" toml:"description"`
	Kind        string         `json:"kind" toml:"kind"`
	Runtime     *RuntimeSpec   `json:"runtime,omitempty" toml:"runtime"`
	Permissions Permissions    `json:"permissions" toml:"permissions"`
	InputSchema map[string]any `json:"input_schema,omitempty" toml:"input_schema"`
}

// RuntimeSpec is the [runtime] table of an action skill.
type RuntimeSpec struct {
	Language   string `json:"language" toml:"language"`
	Entrypoint string `json:"entrypoint" toml:"entrypoint"`
	Export     string `json:"export" toml:"export"`
}

// Permissions is the [permissions] table.
type Permissions struct {
	Secrets []string `json:"secrets" toml:"secrets"`
}

var (
	// Bundle names: lowercase alphanumerics and dots, at least two
	// segments is not required but every segment must be non-empty.
	bundleNameRe = regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9]+)*$`)
	secretRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	identRe      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// MaxNameLength bounds a skill name.
const MaxNameLength = 128

// ValidBundleName reports whether name follows skill.toml's rule:
// lowercase alphanumerics and dots, no empty segment.
func ValidBundleName(name string) bool {
	return len(name) <= MaxNameLength && bundleNameRe.MatchString(name)
}

// ParseManifest decodes and validates skill.toml. Every problem is reported
// with the key that is wrong and what was expected, all at once.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return Manifest{}, fmt.Errorf("skill.toml: %w", err)
	}
	var problems []string
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "input_schema" {
			continue
		}
		problems = append(problems, fmt.Sprintf("unknown key %q (expected name, version, description, kind, [runtime], [permissions], [input_schema])", k.String()))
	}
	problems = append(problems, m.problems()...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return Manifest{}, fmt.Errorf("skill.toml: %s", strings.Join(problems, "; "))
	}
	if m.Permissions.Secrets == nil {
		m.Permissions.Secrets = []string{}
	}
	return m, nil
}

func (m Manifest) problems() []string {
	var p []string
	switch {
	case m.Name == "":
		p = append(p, "name is required (dot notation such as salesforce.leads.sync)")
	case !ValidBundleName(m.Name):
		p = append(p, fmt.Sprintf("name %q must be dot notation of lowercase letters and digits such as salesforce.leads.sync (at most %d characters)", m.Name, MaxNameLength))
	}
	if m.Version == "" {
		p = append(p, "version is required (semver such as 1.0.0)")
	} else if catalog.ValidateVersion(m.Version) != nil {
		p = append(p, fmt.Sprintf("version %q is not semver (expected MAJOR.MINOR.PATCH such as 1.0.0)", m.Version))
	}
	switch d := m.Description; {
	case strings.TrimSpace(d) == "":
		p = append(p, "description is required (one line)")
	case strings.ContainsAny(d, "\r\n"):
		p = append(p, "description must be one line")
	case len(d) > 1024:
		p = append(p, "description is longer than 1024 bytes")
	}
	switch m.Kind {
	case KindAction:
		p = append(p, m.runtimeProblems()...)
	case KindInstruction:
		if m.Runtime != nil {
			p = append(p, "[runtime] is only for kind = \"action\"")
		}
	case "":
		p = append(p, `kind is required ("action" or "instruction")`)
	default:
		p = append(p, fmt.Sprintf(`kind %q must be "action" or "instruction"`, m.Kind))
	}
	for _, s := range m.Permissions.Secrets {
		if !secretRe.MatchString(s) {
			p = append(p, fmt.Sprintf("permissions.secrets entry %q must be an environment variable name (letters, digits, underscore)", s))
		}
	}
	return p
}

func (m Manifest) runtimeProblems() []string {
	r := m.Runtime
	if r == nil {
		return []string{`[runtime] is required for kind = "action" (language = "python", entrypoint = "code/main.py", export = "main")`}
	}
	var p []string
	if r.Language != "python" {
		p = append(p, fmt.Sprintf(`runtime.language %q is not supported (expected "python")`, r.Language))
	}
	if r.Entrypoint == "" {
		p = append(p, `runtime.entrypoint is required (a .py file of the bundle such as "code/main.py")`)
	} else if err := checkRelPath(r.Entrypoint); err != nil || !strings.HasSuffix(r.Entrypoint, ".py") {
		p = append(p, fmt.Sprintf("runtime.entrypoint %q must be a relative .py path inside the bundle such as code/main.py", r.Entrypoint))
	}
	if r.Export == "" {
		r.Export = "main"
	} else if !identRe.MatchString(r.Export) {
		p = append(p, fmt.Sprintf("runtime.export %q must be a Python function name", r.Export))
	}
	return p
}

// checkRelPath accepts a clean, relative, slash-separated path with no ".."
// segment: the only kind of path a bundle file may have.
func checkRelPath(p string) error {
	switch {
	case p == "" || p == ".":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || strings.ContainsRune(p, 0):
		return fmt.Errorf("path %q must be relative, with forward slashes", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean (no ./, //, trailing / or ..)", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("path %q leaves the bundle", p)
		}
	}
	return nil
}
