package treecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueCitation is a citation of an issue by number: the word issue (or
// issues, any case), an optional #, and a number; or a heading's anchor
// that ends in -issue- and a number.
var issueCitation = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|-issue-[0-9]+\b`)

// thirdParty are files the repository holds but did not write: skills of
// the search corpus, copied as their authors wrote them.
func thirdParty(rel string) bool {
	return strings.HasPrefix(rel, "server/internal/search/testdata/corpus/")
}

// Docs, mk files, code comments and test names name the feature, never an
// issue number: a reader of the repository cannot open the issue.
func TestNothingCitesAnIssueNumber(t *testing.T) {
	checked := 0
	check := func(rel, abs string) {
		if thirdParty(rel) {
			return
		}
		raw, err := os.ReadFile(abs)
		if err != nil {
			t.Error(err)
			return
		}
		checked++
		for i, line := range strings.Split(string(raw), "\n") {
			if m := issueCitation.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q: name the feature instead", rel, i+1, m)
			}
		}
	}
	walkTree(t, true, check, ".md", ".mk", "Makefile", ".go", ".ts", ".mjs", ".js", ".py", ".sh", ".yml", ".yaml", ".toml")
	scripts, _ := filepath.Glob(filepath.Join(root(t), "scripts", "*"))
	for _, abs := range scripts {
		check("scripts/"+filepath.Base(abs), abs)
	}
	if checked < 300 {
		t.Errorf("checked %d files; the walk missed the tree", checked)
	}
}

// maxREADMEBytes bounds README.md: what a new user needs (the two
// commands, reading from an MCP client, publishing, a link to every doc
// page) fits; detail belongs to the docs pages.
const maxREADMEBytes = 12000

// mdLink is the target of a markdown link.
var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

// README.md stays under maxREADMEBytes, links to every page of docs/, and
// every file it links to exists.
func TestREADMEIsShortAndLinksEveryDocPage(t *testing.T) {
	base := root(t)
	raw, err := os.ReadFile(filepath.Join(base, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) >= maxREADMEBytes {
		t.Errorf("README.md is %d bytes; keep it under %d: move detail into a docs page and link it", len(raw), maxREADMEBytes)
	}
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		linked[filepath.Clean(target)] = true
		if _, err := os.Stat(filepath.Join(base, target)); err != nil {
			t.Errorf("README.md links to %s, which does not exist", target)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(base, "docs", "*.md"))
	if len(pages) < 10 {
		t.Fatalf("found %d docs pages", len(pages))
	}
	for _, p := range pages {
		if rel := "docs/" + filepath.Base(p); !linked[rel] {
			t.Errorf("README.md does not link to %s", rel)
		}
	}
}
