package rules

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The rules are pinned message by message by the registry's specs
// (server/internal/registry) and the Go publisher's tests (sdk-go/skills), which both
// call them; these tests cover what only this package defines.

func TestRustQuote(t *testing.T) {
	for in, want := range map[string]string{
		"abc":    `"abc"`,
		"a\"b":   `"a\"b"`,
		"a\\b":   `"a\\b"`,
		"\t\r\n": `"\t\r\n"`,
		"\x00":   `"\0"`,
		"é":      `"é"`,
		"\u200b": `"\u{200b}"`,
		"\u0301": `"\u{301}"`,
	} {
		if got := RustQuote(in); got != want {
			t.Errorf("RustQuote(%q) = %s; want %s", in, got, want)
		}
	}
}

func TestHiddenPrefixesCannotBeWeakened(t *testing.T) {
	saved := AlwaysHiddenPrefixes[0]
	AlwaysHiddenPrefixes[0] = "nothing::"
	defer func() { AlwaysHiddenPrefixes[0] = saved }()
	if !IsHidden("engine::functions::list") {
		t.Fatal("mutating the exported slice weakened the guard")
	}
}

// Both the registry's pure domain package and the publisher import this
// package, so it must stay standard-library only.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
				t.Errorf("%s imports %s; only the standard library is allowed", f, path)
			}
		}
	}
}
