package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMarkdownBlocksAreParsedAndExtracted(t *testing.T) {
	dir := t.TempDir()
	md := write(t, dir, "ci.md", "# CI\n\n```yaml\n# .github/workflows/a.yml\nname: a\non: push\n```\n\ntext\n\n```yaml\nplain: yes\n```\n")
	out := filepath.Join(dir, "out")
	n, err := checkFile(md, out)
	if err != nil || n != 2 {
		t.Fatalf("n %d, err %v", n, err)
	}
	b, err := os.ReadFile(filepath.Join(out, ".github/workflows/a.yml"))
	if err != nil || !strings.HasPrefix(string(b), "# .github/workflows/a.yml\nname: a\n") {
		t.Fatalf("extracted %q, %v", b, err)
	}
	bad := write(t, dir, "bad.md", "x\n\n```yaml\na: 1\na: 2\n```\n")
	if _, err := checkFile(bad, ""); err == nil || !strings.Contains(err.Error(), "starting at line 4") {
		t.Fatalf("duplicate key: want an error naming the block's line, got %v", err)
	}
	if _, err := checkFile(write(t, dir, "none.md", "no yaml here\n"), ""); err == nil {
		t.Fatal("markdown without a yaml block must fail")
	}
}

func TestActionMetadata(t *testing.T) {
	dir := t.TempDir()
	good := "name: x\ndescription: y\nruns:\n  using: composite\n  steps:\n    - run: echo\n      shell: bash\n    - uses: actions/checkout@v4\n"
	if _, err := checkFile(write(t, dir, "action.yml", good), ""); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "bad")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := "name: x\nruns:\n  using: node20\n  steps:\n    - run: echo\n"
	_, err := checkFile(write(t, sub, "action.yml", bad), "")
	for _, want := range []string{"description is required", `runs.using is "node20"`, "without shell"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}
