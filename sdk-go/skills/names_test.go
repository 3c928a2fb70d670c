package skills

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/publishers.md ("Names in each SDK") names every concept in the three
// SDKs. This test holds the Go column to the package: every name it lists
// exists, and every exported name of the package (and every method of
// Publisher) is listed, so renaming one here without the table fails.

// namesTable returns the tokens of one column of the names table (1: Go,
// 2: Node, 3: Python).
func namesTable(t *testing.T, column int) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "publishers.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| concept | Go ") })
	if start < 0 {
		t.Fatal(`docs/publishers.md has no names table ("| concept | Go …")`)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var out []string
	rows := 0
	for _, l := range lines[start+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("names table row with %d cells, want 5: %s", len(cells), l)
		}
		rows++
		for _, m := range tick.FindAllStringSubmatch(cells[column], -1) {
			out = append(out, m[1])
		}
	}
	if rows < 30 || len(out) < 60 {
		t.Fatalf("names table: %d rows, %d names in column %d; did the table move?", rows, len(out), column)
	}
	return out
}

// goNames are the exported names of the non-test files in dir: top-level
// names, and "Type.Member" for methods and struct fields.
func goNames(t *testing.T, dir string) (top, members map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	top, members = map[string]bool{}, map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						top[d.Name.Name] = true
						continue
					}
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						members[id.Name+"."+d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							top[s.Name.Name] = true
							if st, ok := s.Type.(*ast.StructType); ok {
								for _, f := range st.Fields.List {
									for _, n := range f.Names {
										if n.IsExported() {
											members[s.Name.Name+"."+n.Name] = true
										}
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									top[n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	return top, members
}

func TestNamesTableMatchesTheGoPackage(t *testing.T) {
	listed := namesTable(t, 1)
	top, members := goNames(t, ".")
	iiiTop, _ := goNames(t, filepath.Join("..", "iii"))
	seen := map[string]bool{}
	for _, name := range listed {
		seen[name] = true
		var ok bool
		switch {
		case strings.HasPrefix(name, "iii."):
			ok = iiiTop[strings.TrimPrefix(name, "iii.")]
		case strings.Contains(name, "."):
			ok = members[name]
		default:
			ok = top[name]
		}
		if !ok {
			t.Errorf("docs/publishers.md lists %s, which sdk-go/skills does not export", name)
		}
	}
	for name := range top {
		if !seen[name] {
			t.Errorf("sdk-go/skills exports %s, which the names table in docs/publishers.md does not list", name)
		}
	}
	for name := range members {
		if strings.HasPrefix(name, "Publisher.") && !seen[name] {
			t.Errorf("Publisher has the method %s, which the names table in docs/publishers.md does not list", name)
		}
	}
}
