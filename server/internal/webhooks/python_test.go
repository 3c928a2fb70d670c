package webhooks_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
	"github.com/iii-skills/skills/server/internal/webhooks"
)

// The Standard Webhooks project's own Python implementation (the
// standardwebhooks package from PyPI) verifies the deliveries of every
// event, and rejects those signed with another secret. WEBHOOKS_PYTHON
// names a Python with the package (make webhooks-py-deps); without it the
// test is "not run".
func TestStandardWebhooksLibraryVerifies(t *testing.T) {
	py := os.Getenv("WEBHOOKS_PYTHON")
	if py == "" {
		t.Skip("not run: WEBHOOKS_PYTHON is not set (make webhooks-py-deps installs the standardwebhooks package from PyPI into .venv-webhooks)")
	}
	secret := newSecret(t)
	cmd := exec.Command(py, "testdata/python/receiver.py", secret)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the Python receiver did not start: %v\n%s", err, stderr.String())
	}
	base := "http://127.0.0.1:" + strings.TrimSpace(line)

	d := start(t, webhooks.Options{MaxAttempts: 2, Endpoints: []webhooks.Endpoint{
		{URL: base + "/good", Secret: secret},
		{URL: base + "/wrong-secret", Secret: newSecret(t)},
	}})
	for i, ev := range webhooks.Events {
		publish(t, d.Dispatcher, webhooks.Change{Type: ev, ID: fmt.Sprintf("team/skill-%d", i), Version: i + 1, Label: "prod",
			Extra: map[string]any{"by": "Zoë ✓"}})
	}
	type seen struct {
		Received []struct {
			Path    string
			ID      string
			Payload struct {
				Type      string
				Timestamp string
				Data      map[string]any
			}
		}
		Rejected []struct{ Path, ID, Error string }
	}
	var got seen
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the receiver saw %+v\nits stderr: %s\nstatus %+v", got, stderr.String(), d.Status())
		}
	})
	n := len(webhooks.Events)
	testutil.Eventually(t, 30*time.Second, "the receiver to verify and reject every delivery", func() bool {
		resp, err := http.Get(base + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		got = seen{}
		return json.NewDecoder(resp.Body).Decode(&got) == nil && len(got.Received) == n && len(got.Rejected) == 2*n && d.Status()[1].Dead == n
	})
	types := map[string]string{} // skill → event type: one change each, any order between skills
	for i, r := range got.Received {
		types[fmt.Sprint(r.Payload.Data["id"])] = r.Payload.Type
		if r.Path != "/good" ||
			r.Payload.Data["by"] != "Zoë ✓" || !strings.HasPrefix(r.ID, "msg_") {
			t.Fatalf("verified delivery %d: %+v", i, r)
		}
		if _, err := time.Parse(time.RFC3339, r.Payload.Timestamp); err != nil {
			t.Fatalf("timestamp %q: %v", r.Payload.Timestamp, err)
		}
	}
	for i, ev := range webhooks.Events {
		if types[fmt.Sprintf("team/skill-%d", i)] != string(ev) {
			t.Fatalf("verified types by skill %v; want skill-%d's %s", types, i, ev)
		}
	}
	for _, r := range got.Rejected {
		if r.Path != "/wrong-secret" || !strings.Contains(r.Error, "No matching signature") {
			t.Fatalf("rejection %+v; want only the wrong secret's, for its signature", r)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the status to count every delivery", func() bool {
		st := d.Status()
		return st[0].Delivered == uint64(n) && st[0].Dead == 0
	})
}
