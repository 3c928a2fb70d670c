package xproc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/testutil"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testutil.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startRole starts this test binary again in a floor role and returns the
// URL it serves.
func startRole(b *testing.B, role string, env ...string) string {
	b.Helper()
	url, _ := startRoleProc(b, role, env...)
	return url
}

// startRoleProc is startRole that also returns the process id.
func startRoleProc(b *testing.B, role string, env ...string) (string, int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("%s did not start: %v", role, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}

// startFloor starts the echo server and the relay; it returns the relay's URL.
func startFloor(b *testing.B) string {
	echo := startRole(b, roleEcho)
	return startRole(b, roleRelay, upEnv+"="+echo)
}

// skillsProc is a `skills --standalone` child process.
type skillsProc struct {
	cmd  *exec.Cmd
	url  string
	data string
}

// startSkills starts `skills --standalone` on a free port with its state
// in data (and data/config.yaml when a benchmark wrote one), and waits
// until the registry answers.
func startSkills(b *testing.B, data string) *skillsProc {
	b.Helper()
	bin := testutil.SkillsBinary(b)
	p := &skillsProc{url: "ws://" + testutil.FreeAddr(b), data: data}
	p.cmd = exec.Command(bin, "--standalone", "--url", p.url, "--data", data, "--mcp-addr", "",
		"--config", filepath.Join(data, "config.yaml"), "--log-level", "error")
	// XPROC_SKILLS_FLAGS adds flags, e.g. "--pprof-addr 127.0.0.1:6060" to
	// profile the registry under the benchmark's load.
	p.cmd.Args = append(p.cmd.Args, strings.Fields(os.Getenv("XPROC_SKILLS_FLAGS"))...)
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.kill)
	c := dial(b, p.url)
	deadline := time.Now().Add(15 * time.Second)
	for call(c, rules.FnSkillsList, map[string]any{}) != nil {
		if time.Now().After(deadline) {
			b.Fatal("skills --standalone did not answer within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// kill ends the process with SIGKILL: nothing is flushed on the way out.
func (p *skillsProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func dial(b *testing.B, url string) *iii.Client {
	b.Helper()
	c := iii.RegisterWorker(url, iii.WithName("xproc-bench"), iii.WithLogger(quiet))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func call(c *iii.Client, fn string, payload any) error {
	_, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: fn, Data: mustJSON(payload), Timeout: 30 * time.Second})
	return err
}

// result is what one measured run gave.
type result struct {
	opsPerSec float64
	p50, p99  time.Duration
}

// measure runs b.N calls spread over len(ops) callers (ops[i] is caller
// i's call) and reports throughput and latency percentiles.
func measure(b *testing.B, ops []func() error) result {
	b.Helper()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(ops))
	b.ResetTimer()
	start, cpu0 := time.Now(), selfCPU()
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := op(); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), selfCPU()-cpu0
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	slices.Sort(lat)
	r := result{opsPerSec: float64(b.N) / elapsed.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
	b.ReportMetric(r.opsPerSec, "ops/s")
	b.ReportMetric(float64(r.p50.Microseconds()), "p50_µs")
	b.ReportMetric(float64(r.p99.Microseconds()), "p99_µs")
	// The callers' own CPU (this process): what a client library costs.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "client_cpu_µs/op")
	return r
}

// body2K is a skill body of exactly 2 KiB with a title and a description.
// Only the header is built per call: the benchmark's own work runs on the
// same two cores as the registry.
func body2K(i int) string {
	n := strconv.Itoa(i)
	return ("# Skill " + n + "\n\nWhen and why to call the tools of worker " + n + ".\n\n" + bodyFiller)[:2048]
}

// bodyFiller is more than 2 KiB of orientation lines.
var bodyFiller = strings.Repeat("- a line of orientation text about one function and its arguments\n", 2048/66+1)

// BenchmarkFetch measures skill::fetch of one 2 KiB skill from another
// process against the two-hop echo floor, with 1 and 64 callers (one
// connection each). The skills rows report their p50 as a multiple of the
// floor's (x_floor_p50) and their throughput as a fraction of the floor's
// (of_floor_ops).
func BenchmarkFetch(b *testing.B) {
	floorURL := startFloor(b)
	skills := startSkills(b, b.TempDir())
	if err := call(dial(b, skills.url), rules.FnSkillsRegister, map[string]string{"id": "bench/one", "skill": body2K(1)}); err != nil {
		b.Fatal(err)
	}
	fetch := map[string]string{"uri": "iii://bench/one"}
	for _, callers := range []int{1, 64} {
		var floor result
		b.Run(fmt.Sprintf("callers=%d/floor", callers), func(b *testing.B) {
			ops := make([]func() error, callers)
			for i := range ops {
				ws, _, err := websocket.DefaultDialer.Dial(floorURL, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer ws.Close()
				ops[i] = floorClient{ws}.call
			}
			floor = measure(b, ops)
		})
		b.Run(fmt.Sprintf("callers=%d/skills", callers), func(b *testing.B) {
			ops := make([]func() error, callers)
			for i := range ops {
				c := dial(b, skills.url)
				ops[i] = func() error { return call(c, rules.FnSkillFetch, fetch) }
			}
			r := measure(b, ops)
			if floor.opsPerSec > 0 {
				b.ReportMetric(float64(r.p50)/float64(floor.p50), "x_floor_p50")
				b.ReportMetric(r.opsPerSec/floor.opsPerSec, "of_floor_ops")
			}
		})
	}
}

// BenchmarkRegister measures durable skills::register with 64 writers (one
// connection each) from another process, then kills the registry with
// SIGKILL, restarts it on the same data and fails if any acknowledged skill
// is missing.
func BenchmarkRegister(b *testing.B) {
	data := b.TempDir()
	skills := startSkills(b, data)
	const writers = 64
	var acked sync.Map
	var seq atomic.Int64
	b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
		ops := make([]func() error, writers)
		for i := range ops {
			c := dial(b, skills.url)
			ops[i] = func() error {
				n := seq.Add(1)
				id := "w" + strconv.FormatInt(n%100, 10) + "/s" + strconv.FormatInt(n, 10)
				if err := call(c, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body2K(int(n))}); err != nil {
					return err
				}
				acked.Store(id, true)
				return nil
			}
		}
		// CPU per call on each side of the socket: on a 2-core machine
		// the two processes share the cores, so both shares bound the rate.
		pid := skills.cmd.Process.Pid
		srv0 := procCPU(b, pid)
		measure(b, ops)
		b.ReportMetric(float64((procCPU(b, pid)-srv0).Microseconds())/float64(b.N), "server_cpu_µs/op")
	})
	skills.kill()
	restarted := startSkills(b, data)
	out, err := dial(b, restarted.url).Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsList, Data: json.RawMessage(`{}`), Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	var list registry.SkillList
	if err := json.Unmarshal(out, &list); err != nil {
		b.Fatal(err)
	}
	stored := map[string]bool{}
	for _, s := range list.Skills {
		stored[s.ID] = true
	}
	lost := 0
	acked.Range(func(k, _ any) bool {
		if !stored[k.(string)] {
			lost++
		}
		return true
	})
	if lost > 0 {
		b.Fatalf("%d acknowledged skills lost after kill -9", lost)
	}
}

// procCPU is the user+system CPU time a process has used so far
// (/proc/{pid}/stat fields 14 and 15, in clock ticks of 10 ms).
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Skip("no /proc stat on this platform")
	}
	// The command name (field 2) may hold spaces: count from after it.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the user+system CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mustJSON encodes a payload the benchmark built itself.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
