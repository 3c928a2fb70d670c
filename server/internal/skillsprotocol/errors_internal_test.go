package skillsprotocol

import "testing"

func TestHidePaths(t *testing.T) {
	for in, want := range map[string]string{
		"read a.txt of x 1.0.0: open /srv/skills/x/a.txt: no such file":          "read a.txt of x 1.0.0: open …/a.txt: no such file",
		"prepare the run folder: mkdir /var/tmp/sp/run-1: permission denied":     "prepare the run folder: mkdir …/run-1: permission denied",
		`sandbox: open run cgroup: open "/sys/fs/cgroup/a/b"`:                    `sandbox: open run cgroup: open "…/b"`,
		"the run wrote /workspace/out and read /blobs/0123 and /skills/a.b/c.py": "the run wrote /workspace/out and read /blobs/0123 and /skills/a.b/c.py",
		"see https://example.com/a/b and application/json":                       "see https://example.com/a/b and application/json",
		"/home/op/skills/x": "…/x",
	} {
		if got := hidePaths(in); got != want {
			t.Errorf("hidePaths(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
