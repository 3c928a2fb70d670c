package treecheck

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// packageRow is a row of one of ARCHITECTURE.md's package tables (the
// tables whose first column is "package"): the cell names folders, each in
// backquotes, and says what they hold.
var backquoted = regexp.MustCompile("`([^`]+)`")

// packageRows reads the first cells of ARCHITECTURE.md's package tables:
// the folders each row names.
func packageRows(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(line, "|")
		first := strings.TrimSpace(cells[1])
		switch {
		case first == "package":
			inTable = true
		case !inTable || strings.HasPrefix(first, "---"):
		default:
			var names []string
			for _, m := range backquoted.FindAllStringSubmatch(first, -1) {
				names = append(names, m[1])
			}
			if len(names) == 0 {
				t.Errorf("ARCHITECTURE.md: a package row names no folder: %s", line)
			}
			rows = append(rows, names)
		}
	}
	return rows
}

// goPackages are the folders of the tree that hold Go files (test data,
// installed dependencies and hidden folders left out).
func goPackages(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	walk(t, func(rel, _ string) { out[path.Dir(rel)] = true }, ".go")
	return out
}

// The package tables of ARCHITECTURE.md name every Go package of the tree
// exactly once, and every folder they name exists: a package added,
// moved or removed without its row fails here.
func TestArchitectureNamesEveryPackageOnce(t *testing.T) {
	base := root(t)
	pkgs := goPackages(t)
	named := map[string]int{}
	for _, row := range packageRows(t) {
		for _, name := range row {
			named[name]++
			if st, err := os.Stat(filepath.Join(base, name)); err != nil || !st.IsDir() {
				t.Errorf("ARCHITECTURE.md has a row for %s, which is no folder of the tree", name)
			}
		}
	}
	var missing []string
	for p := range pkgs {
		switch named[p] {
		case 0:
			missing = append(missing, p)
		case 1:
		default:
			t.Errorf("ARCHITECTURE.md names %s in %d rows; once is enough", p, named[p])
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("the Go package %s has no row in ARCHITECTURE.md's package tables", p)
	}
	if len(pkgs) < 50 {
		t.Errorf("found %d Go packages; the walk missed the tree", len(pkgs))
	}
}
