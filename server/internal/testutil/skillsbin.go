package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// SkillsBinaryEnv names a prebuilt skills binary that SkillsBinary uses
// instead of building one (make sets it to bin/skills).
const SkillsBinaryEnv = "SKILLS_BIN"

// built is the skills binary BuildSkills made for this test process.
var built struct {
	once sync.Once
	dir  string // removed by Main
	path string
	err  error
}

// SkillsBinary returns $SKILLS_BIN when it is set, else BuildSkills.
func SkillsBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(SkillsBinaryEnv); p != "" {
		return p
	}
	return BuildSkills(tb)
}

// BuildSkills builds server/cmd/skills from this checkout, once per test
// process, into a temporary folder that Main removes when the tests end,
// and returns the binary's path. It fails the test when the build fails.
// A package that calls it runs its tests through Main.
func BuildSkills(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "skills-test-bin-")
		if err != nil {
			built.err = fmt.Errorf("build skills: %w", err)
			return
		}
		built.dir, built.path = dir, filepath.Join(dir, "skills")
		// `go test` puts its own go first on PATH; the build runs in the
		// server module whichever package's tests ask for it.
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/skills")
		cmd.Dir = serverDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build skills (go build ./cmd/skills in %s): %v\n%s", cmd.Dir, err, out)
		}
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

// serverDir is the server module's folder (this file is in
// server/internal/testutil).
func serverDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Main runs the tests of a package that uses BuildSkills and removes the
// binary it built afterwards: call it from TestMain (os.Exit(m.Run())
// would leave the binary behind).
func Main(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
