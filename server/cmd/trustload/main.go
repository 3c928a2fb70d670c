// Command trustload runs the hostile-load checks of issue 12 against a real
// `skills --standalone` process that it starts itself on a free loopback
// port with a fresh data directory:
//
//	trustload soak  --skills bin/skills [--clients 1000] [--hogs 3] [--duration 60s]
//	trustload kill9 --skills bin/skills [--writers 64] [--runs 3] [--write-for 3s]
//
// soak: well-behaved clients fetch a 256 KiB skill in a loop while hostile
// clients send the same fetches and never read their sockets. It reports
// errors of the well-behaved clients (must be 0), fetch latency p50/p99 and
// the server's RSS over time, which must return to within 20 % of the
// pre-load value once the clients leave. Exit status 1 when either fails.
//
// kill9: concurrent writers call skills::register and state::set; the
// server is killed with SIGKILL mid-load and restarted on the same data
// directory, and every acknowledged write must read back. Exit status 1 if
// any is missing.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: trustload soak|kill9 --skills PATH [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "soak":
		err = soak(os.Args[2:])
	case "kill9":
		err = kill9(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (want soak or kill9)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trustload:", err)
		os.Exit(1)
	}
}

// server is one `skills --standalone` child process.
type server struct {
	cmd *exec.Cmd
	url string
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
func start(bin, addr, dataDir string) (*server, error) {
	url := "ws://" + addr
	cmd := exec.Command(bin, "--standalone", "--url", url, "--data", dataDir, "--mcp-addr", "", "--log-level", envOr("TRUSTLOAD_SKILLS_LOG", "warn"))
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
	s := &server{cmd: cmd, url: url}
	// Ready once skills::list answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := connect(url, 3*time.Second)
		if err == nil {
			_, err = c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skills::list", Data: js(map[string]any{}), Timeout: 3 * time.Second})
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
	c := iii.RegisterWorker(url, iii.WithName("trustload"), iii.WithLogger(quiet), iii.WithInvocationTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func soak(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	bin := fs.String("skills", "bin/skills", "the skills binary")
	clients := fs.Int("clients", 1000, "well-behaved clients")
	hogs := fs.Int("hogs", 3, "clients that fetch and never read")
	duration := fs.Duration("duration", 60*time.Second, "how long the load runs")
	settle := fs.Duration("settle", 60*time.Second, "how long to wait for RSS to come back after the load")
	_ = fs.Parse(args)

	dir, err := os.MkdirTemp("", "trustload-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	srv, err := start(*bin, addr, dir)
	if err != nil {
		return err
	}
	defer srv.stop()

	seed, err := connect(srv.url, 10*time.Second)
	if err != nil {
		return err
	}
	body := "# Big\n\nA 256 KiB skill.\n\n" + strings.Repeat("lorem ipsum dolor sit amet\n", (255<<10)/27)
	if _, err := seed.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skills::register",
		Data: js(map[string]string{"id": "soak/big", "skill": body})}); err != nil {
		return fmt.Errorf("register the soak skill: %w", err)
	}
	_ = seed.Close()
	time.Sleep(2 * time.Second)
	base := srv.rssKB()
	fmt.Printf("soak: %d clients + %d never-reading clients for %s; pre-load RSS %d KiB\n", *clients, *hogs, *duration, base)

	stop := make(chan struct{})
	var rssMu sync.Mutex
	var samples []string
	peak := base
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r := srv.rssKB()
				rssMu.Lock()
				samples = append(samples, fmt.Sprintf("t=%ds %d KiB", int(time.Since(start).Seconds()), r))
				peak = max(peak, r)
				rssMu.Unlock()
			}
		}
	}()

	// Hostile clients: raw sockets that send fetches and never read.
	var hogConns []*websocket.Conn
	for range *hogs {
		d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 4096}
		ws, _, err := d.Dial(srv.url, nil)
		if err != nil {
			return fmt.Errorf("hog dial: %w", err)
		}
		hogConns = append(hogConns, ws)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f, _ := json.Marshal(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(),
					"function_id": "skill::fetch", "data": map[string]string{"uri": "iii://soak/big"}})
				_ = ws.SetWriteDeadline(time.Now().Add(2 * time.Second))
				if ws.WriteMessage(websocket.TextMessage, f) != nil {
					return // disconnected by the server, as it should be
				}
				if i%100 == 99 {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}

	var okN, errN atomic.Int64
	var latMu sync.Mutex
	lat := make([]time.Duration, 0, 1<<20)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	deadline := time.Now().Add(*duration)
	for i := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := connect(srv.url, 30*time.Second)
			if err != nil {
				errN.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d connect: %v", i, err))
				return
			}
			defer c.Close()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skill::fetch",
					Data: js(map[string]string{"uri": "iii://soak/big"}), Timeout: 30 * time.Second})
				if err != nil || len(out) < 255<<10 {
					errN.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d fetch: %v (%d bytes)", i, err, len(out)))
					continue
				}
				mine = append(mine, time.Since(t0))
				okN.Add(1)
			}
			latMu.Lock()
			lat = append(lat, mine...)
			latMu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	for _, ws := range hogConns {
		_ = ws.Close()
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	rssMu.Lock()
	fmt.Printf("soak: %d fetches ok, %d errors; p50 %s, p99 %s; peak RSS %d KiB\n", okN.Load(), errN.Load(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), peak)
	fmt.Println("soak: RSS during load:", strings.Join(samples, ", "))
	rssMu.Unlock()
	if v := firstErr.Load(); v != nil {
		fmt.Println("soak: first error:", v)
	}

	limit := base + base/5
	var after int64
	settleEnd := time.Now().Add(*settle)
	for {
		after = srv.rssKB()
		if after <= limit || time.Now().After(settleEnd) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	fmt.Printf("soak: RSS after the clients left: %d KiB (pre-load %d KiB, limit %d KiB)\n", after, base, limit)
	var errs []error
	if errN.Load() != 0 {
		errs = append(errs, fmt.Errorf("%d errors for well-behaved clients (want 0)", errN.Load()))
	}
	if after > limit {
		errs = append(errs, fmt.Errorf("RSS %d KiB did not return within 20 %% of %d KiB", after, base))
	}
	if len(errs) == 0 {
		fmt.Println("soak: PASS")
	}
	return errors.Join(errs...)
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
		fmt.Printf("kill9 run %d: %d writers, %d acknowledged writes (skills::register + state::set), %d missing after restart\n",
			run, *writers, acked, len(missing))
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
	dir, err := os.MkdirTemp("", "trustload-kill9-")
	if err != nil {
		return 0, nil, err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return 0, nil, err
	}
	srv, err := start(bin, addr, dir)
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
				if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skills::register",
					Data: js(map[string]string{"id": id, "skill": body}), Timeout: 5 * time.Second}); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, write{"skill", id, body})
				mu.Unlock()
				key, val := fmt.Sprintf("w%d-n%d", w, n), uuid.NewString()
				if _, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "state::set",
					Data: js(map[string]any{"scope": "kill9", "key": key, "value": val}), Timeout: 5 * time.Second}); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, write{"state", key, val})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Until(stopAt))
	srv.kill() // SIGKILL while writes are in flight
	wg.Wait()

	srv, err = start(bin, addr, dir)
	if err != nil {
		return 0, nil, fmt.Errorf("restart: %w", err)
	}
	defer srv.stop()
	c, err := connect(srv.url, 10*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	var missing []string
	for _, w := range acked {
		switch w.kind {
		case "skill":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "skill::fetch",
				Data: js(map[string]string{"uri": "iii://" + w.key})})
			var text string
			if err != nil || json.Unmarshal(out, &text) != nil || !strings.Contains(text, w.value) {
				missing = append(missing, "skill "+w.key)
			}
		case "state":
			out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: "state::get",
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
