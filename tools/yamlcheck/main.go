// Command yamlcheck parses the GitHub Actions files the project ships:
// YAML files, and the ```yaml blocks of markdown files (docs/ci.md's
// copy-paste workflows). Every document must parse (duplicate keys are
// errors); a composite action's metadata (action.yml) must have the keys
// GitHub requires. With --extract DIR, each markdown block whose first
// line is a "# .github/workflows/NAME.yml" comment is written to
// DIR/.github/workflows/NAME.yml for actionlint.
//
//	go run ./server/internal/yamlcheck [--extract DIR] FILE...
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// workflowPathRe is the comment that names a block's workflow file.
var workflowPathRe = regexp.MustCompile(`^# (\.github/workflows/[A-Za-z0-9._-]+\.ya?ml)\s*$`)

func main() {
	extract := flag.String("extract", "", "write the markdown blocks that name a workflow file into `DIR`")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: yamlcheck [--extract DIR] FILE...")
		os.Exit(2)
	}
	failed := false
	for _, file := range flag.Args() {
		n, err := checkFile(file, *extract)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
			continue
		}
		fmt.Printf("%s: %d YAML documents parse\n", file, n)
	}
	if failed {
		os.Exit(1)
	}
}

// block is one YAML text and the line of the file it starts at.
type block struct {
	text string
	line int
}

func checkFile(file, extract string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	blocks := []block{{string(data), 1}}
	if strings.HasSuffix(file, ".md") {
		blocks = yamlBlocks(string(data))
		if len(blocks) == 0 {
			return 0, fmt.Errorf("%s: no ```yaml block", file)
		}
	}
	for _, b := range blocks {
		var doc yaml.Node
		// Decoding into a value (not only a node) also refuses duplicate keys.
		var v any
		err := yaml.Unmarshal([]byte(b.text), &doc)
		if err == nil {
			err = doc.Decode(&v)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: the YAML starting at line %d: %w", file, b.line, err)
		}
		if base := filepath.Base(file); base == "action.yml" || base == "action.yaml" {
			if err := checkAction(&doc); err != nil {
				return 0, fmt.Errorf("%s: %w", file, err)
			}
		}
		if extract == "" {
			continue
		}
		first, _, _ := strings.Cut(b.text, "\n")
		if m := workflowPathRe.FindStringSubmatch(first); m != nil {
			out := filepath.Join(extract, m[1])
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return 0, err
			}
			if _, err := os.Stat(out); err == nil {
				return 0, fmt.Errorf("%s: line %d: a second block names %s", file, b.line, m[1])
			}
			if err := os.WriteFile(out, []byte(b.text), 0o644); err != nil {
				return 0, err
			}
		}
	}
	return len(blocks), nil
}

// yamlBlocks returns the ```yaml fenced blocks of markdown.
func yamlBlocks(md string) []block {
	var out []block
	var cur *bytes.Buffer
	start := 0
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yml"):
			cur, start = &bytes.Buffer{}, i+2
		case cur != nil && trimmed == "```":
			out = append(out, block{cur.String(), start})
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

// checkAction holds action metadata to what GitHub requires of a composite
// action: name, description, runs.using "composite", runs.steps, and a
// shell on every run step.
func checkAction(doc *yaml.Node) error {
	var a struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
		Runs        struct {
			Using string `yaml:"using"`
			Steps []struct {
				Name  string `yaml:"name"`
				Run   string `yaml:"run"`
				Uses  string `yaml:"uses"`
				Shell string `yaml:"shell"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := doc.Decode(&a); err != nil {
		return err
	}
	var problems []string
	if a.Name == "" {
		problems = append(problems, "name is required")
	}
	if a.Description == "" {
		problems = append(problems, "description is required")
	}
	if a.Runs.Using != "composite" {
		problems = append(problems, fmt.Sprintf("runs.using is %q, expected composite", a.Runs.Using))
	}
	if len(a.Runs.Steps) == 0 {
		problems = append(problems, "runs.steps is empty")
	}
	for i, s := range a.Runs.Steps {
		switch {
		case s.Run != "" && s.Uses != "":
			problems = append(problems, fmt.Sprintf("step %d (%s) has both run and uses", i+1, s.Name))
		case s.Run != "" && s.Shell == "":
			problems = append(problems, fmt.Sprintf("step %d (%s) runs a command without shell (required in composite actions)", i+1, s.Name))
		case s.Run == "" && s.Uses == "":
			problems = append(problems, fmt.Sprintf("step %d (%s) has neither run nor uses", i+1, s.Name))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
