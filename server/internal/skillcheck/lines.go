package skillcheck

import (
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// yamlLineRe finds the line in a YAML parser's message ("yaml: line 3: …").
var yamlLineRe = regexp.MustCompile(`line (\d+)`)

// keyRe finds the frontmatter key a folder-rule message is about
// ("frontmatter `description` must be…", "frontmatter name \"X\" must…").
var keyRe = regexp.MustCompile("^frontmatter (?:missing )?(?:`([a-z-]+)(?:[.\\[][^`]*)?`|(name) )")

// yamlLine is the line of the frontmatter a YAML error names, counted from
// the opening "---" (so line 1 of the YAML is file line 2); 0 when the
// message names none.
func yamlLine(msg string) int {
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil && strings.Contains(msg, "YAML") {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// tomlKeyRe finds the skill.toml key a manifest problem is about
// ("skill.toml: version \"x\" is not semver", "unknown key \"runtime.foo\"").
var tomlKeyRe = regexp.MustCompile(`skill\.toml: (?:.*unknown key "(?:[\w-]+\.)*([\w-]+)"|([a-z_]+)(?:\.([a-z_]+))? )`)

// problemLine places a folder problem in its file: the YAML or TOML
// error's line, or the line of the key the reason names, else line 1.
func problemLine(file, reason string) int {
	if strings.HasSuffix(file, "skill.toml") {
		return manifestLine(file, reason)
	}
	if n := yamlLine(reason); n > 0 {
		return n + 1
	}
	m := keyRe.FindStringSubmatch(reason)
	if m == nil {
		return 1
	}
	key := m[1]
	if key == "" {
		key = m[2]
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 1
	}
	yamlText, _, ok := catalog.SplitFrontmatter(string(b))
	if !ok {
		return 1
	}
	lines := strings.Split(yamlText, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, key+":") {
			continue
		}
		// metadata.KEY: the line of KEY in the block below, when the map
		// is written as a block.
		if sub := subKeyRe.FindStringSubmatch(reason); sub != nil && sub[1] == key {
			for j := i + 1; j < len(lines) && (lines[j] == "" || lines[j][0] == ' ' || lines[j][0] == '\t' || lines[j][0] == '#'); j++ {
				t := strings.TrimLeft(lines[j], " \t")
				for _, q := range []string{"", `"`, "'"} {
					if strings.HasPrefix(t, q+sub[2]+q+":") {
						return j + 2
					}
				}
			}
		}
		return i + 2
	}
	return 1
}

// subKeyRe finds a nested key a folder-rule message is about
// ("frontmatter `metadata.author` should be…").
var subKeyRe = regexp.MustCompile("frontmatter `([a-z-]+)\\.([^`]+)`")

// manifestLine places a skill.toml problem: the TOML parser's line, or the
// line that sets the key the reason names.
func manifestLine(file, reason string) int {
	if m := yamlLineRe.FindStringSubmatch(reason); m != nil && strings.Contains(reason, "toml: line") {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	m := tomlKeyRe.FindStringSubmatch(reason)
	if m == nil {
		return 1
	}
	key := m[1]
	if key == "" {
		key = m[2]
		if m[3] != "" {
			key = m[3]
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 1
	}
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, key); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			return i + 1
		}
	}
	return 1
}
