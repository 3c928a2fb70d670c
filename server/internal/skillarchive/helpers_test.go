package skillarchive

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iii-skills/skills/server/internal/testutil"
)

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	testutil.NeedArchivers(t, tools...)
}

// sh runs a command in dir and returns its stdout; it fails the test on
// error.
func sh(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// put writes files (path → content) under dir.
func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readFile reads an archive file and runs Read on it.
func readArchive(t *testing.T, file string, opts Options) (Format, []File, error) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Where == "" {
		opts.Where = filepath.Base(file)
	}
	return Read(f, fi.Size(), opts)
}

// paths lists the files' paths.
func paths(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// byPath finds a file.
func byPath(files []File, p string) (File, bool) {
	for _, f := range files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}

// wantRefused checks that err is an *EntryError naming entry and holding
// every part.
func wantRefused(t *testing.T, err error, entry string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal of entry %q (%v)", entry, parts)
	}
	ee, ok := err.(*EntryError)
	if !ok {
		t.Fatalf("error %T %v; want *EntryError", err, err)
	}
	if ee.Entry != entry {
		t.Fatalf("refused entry %q (%v); want %q", ee.Entry, err, entry)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q lacks %q", err, p)
		}
	}
}
