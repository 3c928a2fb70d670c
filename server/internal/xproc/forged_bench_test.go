package xproc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// BenchmarkForgedChanges is the attack of forged skills::changes messages
// on a registry that shares state (worker mode, as N engines on one Redis
// run it): `skills --standalone --engine-only` and `skills --url` in two
// processes, 1 000 skills of 250 KB registered, then a client in this
// process publishes forged messages for 10 s (a hop from the current
// generation to far beyond it, a key of another registry's scope, keys
// that no skill has, real keys over and over) at about 1 000 a second.
// It reports the registry process's CPU during the flood (cpu_%core) and
// the peak of its resident size above what it held before the flood
// (VmHWM after clear_refs, rss_peak_MiB). SKILLS_BIN measures another
// build (the same binary runs the engine).
func BenchmarkForgedChanges(b *testing.B) {
	const skills, bodyBytes, flood, rate = 1000, 250 << 10, 10 * time.Second, 1000
	bin := testutil.SkillsBinary(b)
	data := b.TempDir()
	engineURL := "ws://" + testutil.FreeAddr(b)
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append(args, "--config", filepath.Join(data, "absent.yaml"), "--log-level", "error", "--mcp-addr", "")...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	start("--standalone", "--engine-only", "--url", engineURL, "--data", filepath.Join(data, "engine"))
	waitEngine(b, engineURL)
	registry := start("--url", engineURL, "--data", filepath.Join(data, "registry"))
	pid := registry.Process.Pid
	c := dial(b, engineURL)
	deadline := time.Now().Add(30 * time.Second)
	for call(c, rules.FnSkillsList, map[string]any{}) != nil {
		if time.Now().After(deadline) {
			b.Fatal("the registry did not answer within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	body := strings.Repeat("- orientation text for a large skill, one of many lines\n", bodyBytes/56)
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := dial(b, engineURL)
			for i := range next {
				if err := call(cl, rules.FnSkillsRegister, map[string]string{"id": "big/s" + strconv.Itoa(i), "skill": "# S" + strconv.Itoa(i) + "\n\n" + body}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range skills {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	idle := testutil.SettledRSS(b, pid)
	if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident size: %v", err)
	}
	var gen struct{ N int64 }
	raw, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: iii.StateGet, Data: mustJSON(map[string]string{"scope": "skills.cluster", "key": "generation"})})
	if err == nil {
		_ = json.Unmarshal(raw, &gen)
	}
	publish := func(msg map[string]any) {
		_, _ = c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: iii.Publish, Action: iii.VoidAction(),
			Data: mustJSON(map[string]any{"topic": rules.TopicChanges, "data": msg})})
	}
	b.ResetTimer()
	cpu0, t0 := procCPU(b, pid), time.Now()
	tick := time.NewTicker(time.Second / rate * 5)
	defer tick.Stop()
	for i := 0; time.Since(t0) < flood; i++ {
		<-tick.C
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": "big/s2", "from": gen.N, "to": gen.N + 1_000_000})
		publish(map[string]any{"node": "forger", "scope": "other", "op": "set", "key": "x"})
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": fmt.Sprintf("nobody/%d", i)})
		publish(map[string]any{"node": "forger", "scope": "skills", "op": "set", "key": "big/s" + strconv.Itoa(i%skills)})
		publish(map[string]any{"node": "forger", "scope": "prompts", "op": "set", "key": "nope"})
	}
	elapsed, cpu := time.Since(t0), procCPU(b, pid)-cpu0
	b.StopTimer()
	peak := testutil.ProcStatus(b, pid, "VmHWM")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "cpu_%core")
	b.ReportMetric(float64(peak-idle)/(1<<20), "rss_peak_MiB")
	b.ReportMetric(float64(idle)/(1<<20), "rss_idle_MiB")
}

// waitEngine waits until an engine accepts a worker connection.
func waitEngine(b *testing.B, url string) {
	b.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c := iii.RegisterWorker(url, iii.WithName("probe"), iii.WithLogger(quiet))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Connect(ctx)
		cancel()
		_ = c.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("no engine at %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
