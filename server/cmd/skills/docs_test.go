package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/app"
)

var docFlag = regexp.MustCompile("`--([a-z0-9][a-z0-9-]*[a-z0-9])\\b")

// section is the text of docs/configuration.md from the heading that
// starts with title to the next heading of the same level.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	i := strings.Index(doc, "\n## "+title)
	if i < 0 {
		t.Fatalf("docs/configuration.md has no section %q", title)
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// docFlags are the flags a section of docs/configuration.md names.
func docFlags(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range docFlag.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// docs/configuration.md has a row for every flag of `skills` and names
// every flag of `skills mcp` (the older names included), and no flag
// either does not have.
func TestConfigurationDocNamesEveryFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	server := flag.NewFlagSet("skills", flag.ContinueOnError)
	cfg := app.DefaultConfig()
	declareWorkerFlags(server, &cfg, new(string), new(bool))
	c := newMCPCommand(app.DefaultConfig())
	mcp := c.flags()
	for _, s := range []struct {
		title string
		fs    *flag.FlagSet
	}{{"Flags of `skills` (", server}, {"Flags of `skills mcp`", mcp}} {
		named := docFlags(section(t, doc, s.title))
		s.fs.VisitAll(func(f *flag.Flag) {
			if !named[f.Name] {
				t.Errorf("docs/configuration.md, %s…: --%s is not there", s.title, f.Name)
			}
		})
		for name := range named {
			if s.fs.Lookup(name) == nil && name != "help" { // every command answers --help
				t.Errorf("docs/configuration.md, %s…: --%s is no flag of the command", s.title, name)
			}
		}
	}
}
