package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SkillsRefPythonEnv names the python of a virtualenv holding skills-ref
// from PyPI, the Agent Skills reference validator (`make test-skills-ref`
// installs it into .venv-skills-ref and sets this variable).
const SkillsRefPythonEnv = "SKILLS_REF_PYTHON"

// SkillsRefValidate has skills-ref's own validator (the function
// `agentskills validate` calls) check each skill folder, in one process:
// the errors of each (none: valid). It skips tb, "not run", when
// skills-ref is not installed.
func SkillsRefValidate(tb testing.TB, dirs ...string) map[string][]string {
	tb.Helper()
	python := os.Getenv(SkillsRefPythonEnv)
	if python == "" {
		venv := filepath.Join(serverDir(), "..", ".venv-skills-ref", "bin", "python")
		if _, err := os.Stat(venv); err == nil {
			python = venv
		}
	}
	if python == "" {
		tb.Skip("not run: skills-ref is not installed (make test-skills-ref installs it into .venv-skills-ref)")
	}
	const script = `import json, sys
from pathlib import Path
from skills_ref.validator import validate
print(json.dumps({d: validate(Path(d)) for d in sys.argv[1:]}))`
	out, err := exec.Command(python, append([]string{"-c", script}, dirs...)...).Output()
	if err != nil {
		tb.Fatalf("skills-ref: %v", err)
	}
	var verdicts map[string][]string
	if err := json.Unmarshal(out, &verdicts); err != nil {
		tb.Fatalf("skills-ref: %v: %s", err, out)
	}
	if len(verdicts) != len(dirs) {
		tb.Fatalf("skills-ref validated %d folders of %d", len(verdicts), len(dirs))
	}
	return verdicts
}
