package skillcheck

// Notes about Agent Skills folders that the server serves all the same:
// frontmatter keys outside the specification (harnesses read their own;
// the reference validators reject them) and a SKILL.md without a body.

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
)

//go:embed harness-keys.tsv
var harnessKeysTSV string

// harnessKeys maps a top-level frontmatter key outside the Agent Skills
// specification to the harnesses known to read it (harness-keys.tsv).
var harnessKeys = parseHarnessKeys(harnessKeysTSV)

func parseHarnessKeys(tsv string) map[string][]string {
	m := map[string][]string{}
	for _, line := range strings.Split(tsv, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, harness, ok := strings.Cut(line, "\t")
		if !ok || key == "" || harness == "" {
			panic(fmt.Sprintf("harness-keys.tsv: want key<TAB>harness, got %q", line))
		}
		if slices.Contains(fsource.AgentSkillsFields, key) {
			panic(fmt.Sprintf("harness-keys.tsv: %s is an Agent Skills field", key))
		}
		m[key] = append(m[key], harness)
	}
	return m
}

// specFields is the Agent Skills field list as messages show it.
var specFields = strings.Join(fsource.AgentSkillsFields, ", ")

// keyWarning is the warning about a top-level key outside the
// specification: which harnesses read it, or where it belongs.
func keyWarning(key string) string {
	msg := fmt.Sprintf("frontmatter key `%s` is not an Agent Skills field (%s): ", key, specFields)
	switch hs, near := harnessKeys[key], nearKey(key); {
	case len(hs) == 1:
		msg += hs[0] + " reads it"
	case len(hs) > 1:
		msg += listOf(hs) + " read it"
	case near != "":
		msg += fmt.Sprintf("it looks like a misspelling of `%s`", near)
	default:
		msg += fmt.Sprintf("no harness we know reads it, expected under `metadata` (metadata.%s)", key)
	}
	return msg + "; served as it is (skills-ref validate rejects the skill for it)"
}

// nearKey is the specification field or known harness key that key
// differs from only in letter case or '_' for '-' (allowed_tools), or "".
func nearKey(key string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	n := norm(key)
	for _, k := range fsource.AgentSkillsFields {
		if norm(k) == n {
			return k
		}
	}
	for k := range harnessKeys {
		if norm(k) == n {
			return k
		}
	}
	return ""
}

func listOf(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// msgEmptyBody is the note on a SKILL.md of frontmatter alone.
const msgEmptyBody = "SKILL.md has no body after its frontmatter: served (the Agent Skills specification's minimal skill is frontmatter alone), but an agent that activates the skill gets no instructions beyond the description"

// checkAgentSkill notes what the specification says about a served Agent
// Skills folder that the server does not refuse.
func (c *checker) checkAgentSkill(e *catalog.Entry) {
	if e.Origin.Kind != catalog.OriginFolder || e.Main != fsource.SkillFile {
		return
	}
	file := filepath.Join(e.Origin.Source, filepath.FromSlash(e.Origin.Path))
	if !c.keep(e.Origin.Source, file) {
		return
	}
	for _, key := range e.Frontmatter.Fields.Keys() {
		if !slices.Contains(fsource.AgentSkillsFields, key) {
			c.add(Warning, file, frontmatterKeyLine(file, key), "agent-skills", keyWarning(key))
		}
	}
	if body, err := e.Body.String(); err == nil && strings.TrimSpace(body) == "" {
		c.add(Warning, file, closingFenceLine(file), "agent-skills", msgEmptyBody)
	}
}

// frontmatterKeyLine is the file line of a top-level frontmatter key
// (written bare or quoted), 1 when it is not found.
func frontmatterKeyLine(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 1
	}
	yamlText, _, ok := catalog.SplitFrontmatter(string(b))
	if !ok {
		return 1
	}
	for i, l := range strings.Split(yamlText, "\n") {
		for _, q := range []string{"", `"`, "'"} {
			if strings.HasPrefix(l, q+key+q+":") {
				return i + 2
			}
		}
	}
	return 1
}

// closingFenceLine is the line of the "---" that ends the frontmatter.
func closingFenceLine(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 1
	}
	yamlText, _, ok := catalog.SplitFrontmatter(string(b))
	switch {
	case !ok:
		return 1
	case yamlText == "":
		return 2
	}
	return strings.Count(yamlText, "\n") + 3
}
