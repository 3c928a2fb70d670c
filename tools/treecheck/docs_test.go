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
