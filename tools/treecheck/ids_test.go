package treecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// idFiles are the only non-test Go files that may spell a function or
// trigger-type id:
//   - sdk-go/rules/ids.go: the registry's ids (skills::, skill::,
//     prompts::), for the server and the Go publisher;
//   - sdk-go/iii/ids.go: the engine's built-ins (engine::, state::), under
//     the official iii SDKs' names;
//   - server/internal/directory/ids.go: iii-directory's ids (directory::).
//     They belong to the package that serves them: iii-directory is an
//     upstream worker of its own, whose surface that package alone
//     provides, and everyone else names them through it.
//
// The conformance suite is left out on purpose: it is black-box, and its
// literals are the contract it checks. Were it to share the server's
// constants, a renamed constant would change the server and the check at
// once and nothing would fail.
var idFiles = map[string]bool{
	"sdk-go/rules/ids.go":              true,
	"sdk-go/iii/ids.go":                true,
	"server/internal/directory/ids.go": true,
}

// idLiteral finds a function or trigger-type id of ours or the engine's
// in a string: a namespace and a name (skills::list, state::get,
// engine::functions::list, directory::skills::on-change). A namespace
// alone ("engine::", "skills::") is a prefix, not an id.
var idLiteral = regexp.MustCompile(`\b(skills?|prompts|engine|directory|state)(::[A-Za-z0-9_-]+)+`)

// namespaceOnly is a literal that is nothing but namespaces ("engine::queue::").
var namespaceOnly = regexp.MustCompile(`^([a-z]+::)+$`)

// eachStringLiteral calls f with every string literal of the non-test Go
// files of the tree but those skip names (the conformance suite always
// skipped: it is black-box, see idFiles), and says how many files it read.
func eachStringLiteral(t *testing.T, skip func(rel string) bool, f func(rel string, line int, s string)) int {
	t.Helper()
	files := 0
	walk(t, func(rel, abs string) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "conformance/") || skip(rel) {
			return
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, abs, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		files++
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					f(rel, fset.Position(lit.Pos()).Line, s)
				}
			}
			return true
		})
	}, ".go")
	return files
}

// No Go code outside the ids files writes an id as a literal, in code, in
// a message or in a description: each is a constant of its ids file.
func TestNoFunctionIDLiterals(t *testing.T) {
	checked := eachStringLiteral(t, func(rel string) bool { return idFiles[rel] }, func(rel string, line int, s string) {
		if namespaceOnly.MatchString(s) {
			return
		}
		if id := idLiteral.FindString(s); id != "" {
			t.Errorf("%s:%d: the id %s is written as a literal (%s); use its constant from sdk-go/rules/ids.go, sdk-go/iii/ids.go or server/internal/directory/ids.go",
				rel, line, id, clip(s))
		}
	})
	if checked < 200 {
		t.Errorf("checked %d Go files; the walk missed the tree", checked)
	}
}

// verdictCode is a verdict's error code written as a literal.
var verdictCode = regexp.MustCompile(`^(FORBIDDEN|forbidden|NOT_FOUND|INVALID_ARGUMENTS|OUT_OF_SCOPE)$`)

// Each verdict's error code has one name, rules.Code…, declared once in
// sdk-go/rules/rules.go: no other non-test Go file spells it.
func TestVerdictCodesHaveOneName(t *testing.T) {
	eachStringLiteral(t, func(rel string) bool { return rel == "sdk-go/rules/rules.go" }, func(rel string, line int, s string) {
		if verdictCode.MatchString(s) {
			t.Errorf("%s:%d: the code %s is written as a literal; use its rules.Code… constant", rel, line, s)
		}
	})
}

func clip(s string) string {
	if len(s) > 60 {
		return strconv.Quote(s[:60]) + "…"
	}
	return strconv.Quote(s)
}
