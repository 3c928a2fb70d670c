package registry_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The package is pure domain code: only these standard-library packages,
// and sdk-go/rules (the validation rules shared with the Go publisher,
// itself standard-library only), may be imported by non-test files (no
// transport, no client, no os/net).
var allowedImports = map[string]bool{
	"bytes": true, "encoding/json": true, "errors": true, "fmt": true, "io": true,
	"slices": true, "strconv": true, "strings": true, "sync": true, "time": true,
	"unicode": true, "unicode/utf8": true, "unicode/utf16": true,
	"github.com/iii-skills/skills/sdk-go/rules": true,
}

var _ = Describe("package purity", Label("pure"), func() {
	It("imports nothing beyond the allowed standard library", func() {
		files, err := filepath.Glob("*.go")
		Expect(err).NotTo(HaveOccurred())
		checked := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			Expect(err).NotTo(HaveOccurred())
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				Expect(allowedImports).To(HaveKey(path), "%s imports %s", f, path)
			}
			checked++
		}
		Expect(checked).To(BeNumerically(">=", 10))
	})
})
