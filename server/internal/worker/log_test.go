package worker

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// logRecords is a slog JSON sink the test can read while the worker writes.
type logRecords struct{ testutil.Buffer }

// records decodes every line written so far.
func (l *logRecords) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// A registration logs one info line that names it (never the body); the
// skill body is logged only at debug level.
func TestRegistrationLogLines(t *testing.T) {
	const (
		id     = "logtest/skill"
		body   = "# Log test\n\nbody-marker-7f3a: the text of the skill."
		prompt = "logtest-prompt"
		fn     = "logtest::prompt"
	)
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			sink := &logRecords{}
			log := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: level}))
			s := startStack(t, t.TempDir(), func(_ *stack, o *Options) { o.Logger = log })

			// Registered twice: one line per registration, not per call path.
			for range 2 {
				s.mustCall(t, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body}, nil)
			}
			s.mustCall(t, rules.FnPromptsRegister, map[string]any{"name": prompt,
				"description": "Compose a log test", "function_id": fn}, nil)

			// Stopped first, so no line is still being written.
			s.stop()
			var skillLines, promptLines, bodyLines int
			for _, r := range sink.records(t) {
				line, _ := json.Marshal(r)
				switch r["msg"] {
				case "skill registered":
					skillLines++
					if r["level"] != "INFO" || r["id"] != id || r["bytes"] != float64(len(body)) {
						t.Errorf("skill registered: %s, want level INFO, id %s, bytes %d", line, id, len(body))
					}
				case "prompt registered":
					promptLines++
					if r["level"] != "INFO" || r["name"] != prompt || r["function_id"] != fn {
						t.Errorf("prompt registered: %s, want level INFO, name %s, function_id %s", line, prompt, fn)
					}
				}
				if strings.Contains(string(line), "body-marker-7f3a") {
					bodyLines++
					if r["level"] != "DEBUG" || r["msg"] != "skill body" || r["id"] != id || r["body"] != body {
						t.Errorf("the skill body is logged in %s, want only in a DEBUG \"skill body\" line with the id", line)
					}
				}
			}
			if skillLines != 2 || promptLines != 1 {
				t.Errorf("%d \"skill registered\" lines for 2 registrations and %d \"prompt registered\" for 1", skillLines, promptLines)
			}
			wantBody := 0
			if level == slog.LevelDebug {
				wantBody = 2
			}
			if bodyLines != wantBody {
				t.Errorf("at level %s the body is logged %d times, want %d", level, bodyLines, wantBody)
			}
		})
	}
}
