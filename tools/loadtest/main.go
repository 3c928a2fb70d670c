// Command loadtest runs the hostile-load checks against a real
// `skills --standalone` process that it starts itself on a free loopback
// port with a fresh data directory:
//
//	loadtest soak  --skills bin/skills [--clients 1000] [--hogs 3] [--baseline 30s] [--duration 60s] [--hog-redial] [--pprof-dir DIR]
//	loadtest kill9 --skills bin/skills [--writers 64] [--runs 3] [--write-for 3s]
//	loadtest rpcmem --skills bin/skills [--copies 200] [--batch 60] [--max-peak-mib N]
//	loadtest slowread --skills bin/skills [--surface rpc,mcp] [--readers 32,64] [--file-mib 15] [--max-above-idle-mib N]
//
// soak: well-behaved clients fetch a 256 KiB skill in a loop, first alone
// (--baseline), then while hostile clients send the same fetches and never
// read their sockets (--duration). It reports errors of the well-behaved
// clients (must be 0), fetch latency p50/p99 of both phases and the
// server's RSS over time, which must return to within 20 % of the pre-load
// value once the clients leave. The pre-load value is taken after a short
// warm-up and an idle spell (what the first requests leave behind is not a
// leak of the load); the cold value is reported beside it. Exit status 1
// when either check fails.
//
// kill9: concurrent writers call skills::register and state::set, and
// each also registers new versions of a skill of its own and moves its
// "stable" label onto them (skills::label); the server is killed with
// SIGKILL mid-load and restarted on the same data directory, and every
// acknowledged write must read back: each acknowledged version by its
// number (iii://id@N) within retention (the last 45 of each skill), and
// the label no older than its last acknowledged move. Exit status 1 if
// any is missing.
//
// rpcmem: small /rpc requests that named big blobs (the /rpc memory attack);
// prints the server's peak RSS under each (see rpcmem.go).
//
// slowread: 32 and 64 concurrent slow readers of a 15 MiB folder file over
// /rpc and over MCP; prints the server's peak RSS above idle for each (see
// slowread.go).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadtest soak|kill9|rpcmem|slowread --skills PATH [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "soak":
		err = soak(os.Args[2:])
	case "kill9":
		err = kill9(os.Args[2:])
	case "rpcmem":
		err = rpcmem(os.Args[2:])
	case "slowread":
		err = slowread(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (want soak, kill9, rpcmem or slowread)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// server is one `skills --standalone` child process.
type server struct {
	cmd       *exec.Cmd
	url       string
	pprofAddr string // its --pprof-addr, or ""
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs bin/skills on addr with dataDir and waits until it is ready.
// extra flags are appended (a later flag wins, e.g. --mcp-addr).
func start(bin, addr, dataDir, pprofAddr string, extra ...string) (*server, error) {
	url := "ws://" + addr
	args := []string{"--standalone", "--url", url, "--data", dataDir, "--mcp-addr", "", "--log-level", envOr("LOADTEST_SKILLS_LOG", "warn")}
	if pprofAddr != "" {
		args = append(args, "--pprof-addr", pprofAddr)
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { // keep the pipe drained; show warnings and errors
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, "  [skills]", truncate(sc.Text(), 300))
		}
	}()
	s := &server{cmd: cmd, url: url, pprofAddr: pprofAddr}
	// Ready once skills::list answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := connect(url, 3*time.Second)
		if err == nil {
			_, err = c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsList, Data: js(map[string]any{}), Timeout: 3 * time.Second})
			_ = c.Close()
			if err == nil {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("skills did not become ready on %s: %w", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.kill()
	}
}

// rssKB reads VmRSS of the child from /proc.
func (s *server) rssKB() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

func connect(url string, timeout time.Duration) (*iii.Client, error) {
	c := iii.RegisterWorker(url, iii.WithName("loadtest"), iii.WithLogger(quiet), iii.WithInvocationTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func kill9(args []string) error {
	fs := flag.NewFlagSet("kill9", flag.ExitOnError)
	bin := fs.String("skills", "bin/skills", "the skills binary")
	writers := fs.Int("writers", 64, "concurrent writers")
	runs := fs.Int("runs", 3, "kill/restart rounds")
	writeFor := fs.Duration("write-for", 3*time.Second, "how long writers run before SIGKILL")
	_ = fs.Parse(args)

	var failed []error
	for run := 1; run <= *runs; run++ {
		acked, missing, err := kill9Run(*bin, *writers, *writeFor)
		if err != nil {
			return fmt.Errorf("run %d: %w", run, err)
		}
		fmt.Printf("kill9 run %d: %d writers, %d acknowledged writes (%s + %s + versions + label moves), %d missing after restart\n",
			run, *writers, acked, rules.FnSkillsRegister, iii.StateSet, len(missing))
		if len(missing) > 0 {
			failed = append(failed, fmt.Errorf("run %d: %d acknowledged writes missing, e.g. %s", run, len(missing), missing[0]))
		}
	}
	if len(failed) == 0 {
		fmt.Println("kill9: PASS")
	}
	return errors.Join(failed...)
}

type write struct {
	kind, key, value string
}

func kill9Run(bin string, writers int, writeFor time.Duration) (int, []string, error) {
	dir, err := os.MkdirTemp("", "loadtest-kill9-")
	if err != nil {
		return 0, nil, err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return 0, nil, err
	}
	srv, err := start(bin, addr, dir, "")
	if err != nil {
		return 0, nil, err
	}
	var mu sync.Mutex
	var acked []write
	var wg sync.WaitGroup
	stopAt := time.Now().Add(writeFor)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := connect(srv.url, 10*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			for n := 0; ; n++ {
				// Keep writing until the server dies; only acknowledged
				// writes count.
				id := fmt.Sprintf("kill9/w%d/n%d", w, n)
				body := fmt.Sprintf("# W%d N%d\n\nwritten before the kill.", w, n)
				if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsRegister,
					Data: js(map[string]string{"id": id, "skill": body}), Timeout: 5 * time.Second}); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, write{"skill", id, body})
				mu.Unlock()
				key, val := fmt.Sprintf("w%d-n%d", w, n), uuid.NewString()
				if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: iii.StateSet,
					Data: js(map[string]any{"scope": "kill9", "key": key, "value": val}), Timeout: 5 * time.Second}); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, write{"state", key, val})
				mu.Unlock()
				// A new version of the writer's own skill, then its label.
				vid, vbody := fmt.Sprintf("kill9/versioned/w%d", w), fmt.Sprintf("# W%d\n\nversion body %d", w, n)
				if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsRegister,
					Data: js(map[string]string{"id": vid, "skill": vbody, "message": "n" + strconv.Itoa(n)}), Timeout: 5 * time.Second}); err != nil {
					return
				}
				out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsLabel,
					Data: js(map[string]any{"id": vid, "label": "stable", "version": "latest"}), Timeout: 5 * time.Second})
				if err != nil {
					return
				}
				var move struct{ Version int }
				if json.Unmarshal(out, &move) != nil || move.Version < 1 {
					return
				}
				mu.Lock()
				acked = append(acked, write{"version", fmt.Sprintf("%s@%d", vid, move.Version), vbody},
					write{"label", vid, strconv.Itoa(move.Version)})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Until(stopAt))
	srv.kill() // SIGKILL while writes are in flight
	wg.Wait()

	srv, err = start(bin, addr, dir, "")
	if err != nil {
		return 0, nil, fmt.Errorf("restart: %w", err)
	}
	defer srv.stop()
	c, err := connect(srv.url, 10*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	// Retention keeps the last 50 versions of an id (and labelled ones):
	// older acknowledged versions may be gone by design, so only the last
	// 45 acknowledged ones of each skill are checked (a writer has at most
	// one unacknowledged version in flight).
	newest := map[string]int{}
	for _, w := range acked {
		if w.kind == "label" {
			v, _ := strconv.Atoi(w.value)
			newest[w.key] = max(newest[w.key], v)
		}
	}
	var missing []string
	for _, w := range acked {
		if w.kind == "version" {
			id, v, _ := strings.Cut(w.key, "@")
			if n, _ := strconv.Atoi(v); n <= newest[id]-45 {
				continue
			}
		}
		switch w.kind {
		case "skill":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch,
				Data: js(map[string]string{"uri": "iii://" + w.key})})
			var text string
			if err != nil || json.Unmarshal(out, &text) != nil || !strings.Contains(text, w.value) {
				missing = append(missing, "skill "+w.key)
			}
		case "version":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsResourcesRead,
				Data: js(map[string]string{"uri": "iii://" + w.key})})
			var read struct{ Contents []struct{ Text string } }
			if err != nil || json.Unmarshal(out, &read) != nil || len(read.Contents) != 1 || read.Contents[0].Text != w.value {
				missing = append(missing, "version "+w.key)
			}
		case "label":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsVersions,
				Data: js(map[string]string{"id": w.key})})
			var l struct{ Labels map[string]int }
			want, _ := strconv.Atoi(w.value)
			if err != nil || json.Unmarshal(out, &l) != nil || l.Labels["stable"] < want {
				missing = append(missing, fmt.Sprintf("label stable of %s at %d or later", w.key, want))
			}
		case "state":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: iii.StateGet,
				Data: js(map[string]string{"scope": "kill9", "key": w.key})})
			if err != nil || string(out) != strconv.Quote(w.value) {
				missing = append(missing, "state "+w.key)
			}
		}
	}
	return len(acked), missing, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// js encodes a payload this program built itself.
func js(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
