package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SDKs with a conformance driver (DRIVER.md).
var SDKs = []string{"go", "node", "python"}

// DriverCommand is how to start the driver of sdk from the repository root;
// path is the file whose absence means "driver missing". The Go driver is
// built once into dir.
func DriverCommand(ctx context.Context, sdk, root, dir string) (argv []string, err error) {
	switch sdk {
	case "go":
		bin := filepath.Join(dir, "skills-go-driver")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/iii-skills/skills/sdk-go/skills/internal/driver")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build of the Go driver failed: %w\n%s", err, out)
		}
		return []string{bin}, nil
	case "node":
		js := filepath.Join(root, "sdk-node", "dist", "driver.js")
		if _, err := os.Stat(js); err != nil {
			return nil, fmt.Errorf("driver missing: %s", js)
		}
		return []string{"node", js}, nil
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			return nil, fmt.Errorf("driver missing: %s", py)
		}
		return []string{py, "-m", "iii_skills._driver"}, nil
	}
	return nil, fmt.Errorf("unknown SDK %q (want one of %v)", sdk, SDKs)
}

// Driver is one running publisher driver.
type Driver struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	done   chan struct{}

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan reply
	events  []map[string]any
	exited  bool
}

type reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// DriverError is an ok:false reply.
type DriverError struct{ Message string }

func (e *DriverError) Error() string { return e.Message }

// StartDriver runs argv in root with III_URL=url, and without SSH_AUTH_SOCK:
// a publisher given an encrypted or public key file signs through the
// ssh-agent there, and the specs are about key files, not the agent of
// whoever runs them.
func StartDriver(argv []string, root, url string) (*Driver, error) {
	d := &Driver{stderr: &syncBuffer{}, done: make(chan struct{}), waiting: map[int]chan reply{}}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Dir = root
	env := []string{"III_URL=" + url}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SSH_AUTH_SOCK=") && !strings.HasPrefix(kv, "III_URL=") {
			env = append(env, kv)
		}
	}
	d.cmd.Env = env
	d.cmd.Stderr = d.stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start driver %v: %w", argv, err)
	}
	go d.read(stdout)
	return d, nil
}

func (d *Driver) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			fmt.Fprintf(d.stderr, "[suite] unparsable driver line: %s\n", sc.Text())
			continue
		}
		if _, ok := m["event"]; ok {
			var ev map[string]any
			_ = json.Unmarshal(sc.Bytes(), &ev)
			d.mu.Lock()
			d.events = append(d.events, ev)
			d.mu.Unlock()
			continue
		}
		var id int
		var r reply
		if json.Unmarshal(m["id"], &id) != nil || json.Unmarshal(sc.Bytes(), &r) != nil {
			fmt.Fprintf(d.stderr, "[suite] driver line without an integer id: %s\n", sc.Text())
			continue
		}
		d.mu.Lock()
		ch := d.waiting[id]
		delete(d.waiting, id)
		d.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	_ = d.cmd.Wait()
	d.mu.Lock()
	d.exited = true
	d.mu.Unlock()
	close(d.done)
}

// Do sends one command and waits for its reply. The frame's "id" and "cmd"
// are the suite's; an argument of the same name is a caller's mistake.
func (d *Driver) Do(ctx context.Context, cmd string, args map[string]any) (json.RawMessage, error) {
	for _, k := range []string{"id", "cmd"} {
		if _, ok := args[k]; ok {
			return nil, fmt.Errorf("driver %s: argument %q is the frame's (use skill_id / function_id for the skill and function ids)", cmd, k)
		}
	}
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan reply, 1)
	d.waiting[id] = ch
	d.mu.Unlock()
	frame := map[string]any{}
	for k, v := range args {
		frame[k] = v
	}
	frame["id"], frame["cmd"] = id, cmd
	line, err := json.Marshal(frame)
	if err != nil {
		return nil, err
	}
	if _, err := d.stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("write %s to the driver: %w", cmd, err)
	}
	select {
	case r := <-ch:
		if !r.OK {
			return nil, &DriverError{Message: r.Error}
		}
		return r.Result, nil
	case <-d.done:
		return nil, fmt.Errorf("driver exited before answering %s; stderr:\n%s", cmd, d.Stderr())
	case <-ctx.Done():
		return nil, fmt.Errorf("no reply to %s: %w", cmd, ctx.Err())
	}
}

// Events returns the events received so far.
func (d *Driver) Events() []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]map[string]any, len(d.events))
	copy(out, d.events)
	return out
}

// EventsNamed returns the events of one name.
func (d *Driver) EventsNamed(name string) []map[string]any {
	var out []map[string]any
	for _, ev := range d.Events() {
		if ev["event"] == name {
			out = append(out, ev)
		}
	}
	return out
}

// Stderr is what the driver printed on stderr.
func (d *Driver) Stderr() string { return d.stderr.String() }

// Close sends close (unregister=false) and waits for the exit; the process
// is killed if it does not exit within 20 s. Closing a driver that already
// exited does nothing.
func (d *Driver) Close() error {
	d.mu.Lock()
	exited := d.exited
	d.mu.Unlock()
	if exited {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := d.Do(ctx, "close", map[string]any{"unregister": false})
	_ = d.stdin.Close()
	select {
	case <-d.done:
	case <-ctx.Done():
		_ = d.cmd.Process.Kill()
		<-d.done
		err = errors.Join(err, errors.New("driver did not exit after close"))
	}
	return err
}
