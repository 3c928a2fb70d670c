package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// Soak phases: the same well-behaved clients fetch throughout; the
// never-reading clients join for the second phase only, so the two
// latency figures differ by the hostile readers alone.
const (
	phaseRamp    = iota // the first fetches of all clients at once: not counted
	phaseWithout        // no hostile readers
	phaseWith           // hostile readers connected (and re-dialing when dropped)
)

// soakSkill is the 256 KiB skill every client fetches.
var soakSkill = "# Big\n\nA 256 KiB skill.\n\n" + strings.Repeat("lorem ipsum dolor sit amet\n", (255<<10)/27)

func soak(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	bin := fs.String("skills", "bin/skills", "the skills binary")
	clients := fs.Int("clients", 1000, "well-behaved clients")
	hogs := fs.Int("hogs", 3, "clients that fetch and never read")
	redial := fs.Bool("hog-redial", false, "never-reading clients dial again whenever the server drops them, as a persistent attacker would")
	baseline := fs.Duration("baseline", 30*time.Second, "how long the clients fetch before the never-reading clients join (latency without them)")
	duration := fs.Duration("duration", 60*time.Second, "how long the clients fetch beside the never-reading clients")
	warmup := fs.Bool("warmup", true, "before the pre-load RSS is taken, every client fetches once and leaves and the server idles, so that it is the RSS of a warm, idle server (the cold value is reported too)")
	settle := fs.Duration("settle", 60*time.Second, "how long to wait for RSS to come back after the load")
	pprofDir := fs.String("pprof-dir", "", "if set, run the server with --pprof-addr and save its heap and goroutine profiles (warm and after the load) here")
	_ = fs.Parse(args)

	dir, err := os.MkdirTemp("", "loadtest-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	var pprofAddr string
	if *pprofDir != "" {
		if err := os.MkdirAll(*pprofDir, 0o755); err != nil {
			return err
		}
		if pprofAddr, err = freeAddr(); err != nil {
			return err
		}
	}
	srv, err := start(*bin, addr, dir, pprofAddr)
	if err != nil {
		return err
	}
	defer srv.stop()

	seed, err := connect(srv.url, 10*time.Second)
	if err != nil {
		return err
	}
	if _, err := seed.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillsRegister,
		Data: js(map[string]string{"id": "soak/big", "skill": soakSkill})}); err != nil {
		return fmt.Errorf("register the soak skill: %w", err)
	}
	_ = seed.Close()
	time.Sleep(2 * time.Second)
	cold := srv.rssKB()

	// Warm-up: every client connects, fetches once and leaves, then the
	// server idles. What the first round leaves behind is not a leak of
	// the load: the rendered skill, and the Go runtime's high-water marks
	// for that many connections and that heap (goroutine descriptors, poll
	// descriptors, span and GC metadata), which it keeps for reuse.
	if *warmup {
		var okW atomic.Int64
		var wg sync.WaitGroup
		for range *clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := connect(srv.url, 60*time.Second)
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := fetch(c); err == nil {
					okW.Add(1)
				}
			}()
		}
		wg.Wait()
		time.Sleep(12 * time.Second) // idle: past the server's memory-relief ticks
		fmt.Printf("soak: warm-up: %d clients fetched once and left\n", okW.Load())
	}
	warm := srv.rssKB()
	srv.saveProfiles(*pprofDir, "warm")
	fmt.Printf("soak: %d clients for %s, then beside %d never-reading clients for %s; pre-load RSS %d KiB warm and idle (%d KiB cold)\n",
		*clients, *baseline, *hogs, *duration, warm, cold)

	stop := make(chan struct{})
	var rssMu sync.Mutex
	var samples []string
	peak := warm
	loadStart := time.Now()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r := srv.rssKB()
				rssMu.Lock()
				samples = append(samples, fmt.Sprintf("t=%ds %d KiB", int(time.Since(loadStart).Seconds()), r))
				peak = max(peak, r)
				rssMu.Unlock()
			}
		}
	}()

	// Every client connects first, so that neither phase's latency
	// includes the connection storm.
	conns := make([]*iii.Client, *clients)
	var errN [3]atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := connect(srv.url, 60*time.Second)
			if err != nil {
				errN[phaseRamp].Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d connect: %v", i, err))
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()

	var phase atomic.Int32 // phaseRamp
	var latMu sync.Mutex
	var lat [3][]time.Duration
	end := time.Now().Add(*baseline + *duration)
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			var mine [3][]time.Duration
			for time.Now().Before(end) {
				p := phase.Load()
				t0 := time.Now()
				if n, err := fetch(c); err != nil {
					errN[p].Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d fetch: %v (%d bytes)", i, err, n))
					continue
				}
				mine[p] = append(mine[p], time.Since(t0))
			}
			latMu.Lock()
			for p := range mine {
				lat[p] = append(lat[p], mine[p]...)
			}
			latMu.Unlock()
		}()
	}
	ramp := min(5*time.Second, *baseline/4)
	time.Sleep(ramp)
	phase.Store(phaseWithout)
	cpuWindow := min(10*time.Second, *baseline-ramp, *duration)
	time.Sleep(*baseline - ramp - cpuWindow)
	srv.saveCPUProfile(*pprofDir, "cpu-without.pb.gz", cpuWindow)
	phase.Store(phaseWith)
	var hogWG sync.WaitGroup
	var hogDials, hogDrops atomic.Int64
	for range *hogs {
		hogWG.Add(1)
		go func() {
			defer hogWG.Done()
			hog(srv.url, stop, *redial, &hogDials, &hogDrops)
		}()
	}
	srv.saveCPUProfile(*pprofDir, "cpu-with.pb.gz", cpuWindow)
	wg.Wait()
	close(stop)
	hogWG.Wait()
	loadEnd := time.Now()

	rssMu.Lock()
	fmt.Printf("soak: peak RSS %d KiB; RSS during load: %s\n", peak, strings.Join(samples, ", "))
	rssMu.Unlock()
	for p, name := range []string{fmt.Sprintf("first %s (not counted)", ramp), "without never-reading clients", fmt.Sprintf("beside %d never-reading clients", *hogs)} {
		l := lat[p]
		slices.Sort(l)
		fmt.Printf("soak: %s: %d fetches ok, %d errors; p50 %s, p99 %s, max %s\n", name, len(l), errN[p].Load(),
			pct(l, 0.50), pct(l, 0.99), pct(l, 1))
	}
	fmt.Printf("soak: never-reading clients: %d connections, %d dropped by the server\n", hogDials.Load(), hogDrops.Load())
	if v := firstErr.Load(); v != nil {
		fmt.Println("soak: first error:", v)
	}

	limit := warm + warm/5
	var after int64
	settleEnd := time.Now().Add(*settle)
	for i := 0; ; i++ {
		after = srv.rssKB()
		if i == 1 {
			srv.saveProfiles(*pprofDir, "settling") // what is still held shortly after the load
		}
		if st := srv.memStats(); st != "" {
			fmt.Printf("soak: settling: RSS %d KiB, %s\n", after, st)
		}
		if after <= limit || time.Now().After(settleEnd) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	fmt.Printf("soak: RSS %s after the clients left: %d KiB (pre-load %d KiB warm, limit %d KiB; %d KiB cold, %+.0f %%)\n",
		time.Since(loadEnd).Round(time.Second), after, warm, limit, cold, 100*float64(after-cold)/float64(cold))
	srv.saveProfiles(*pprofDir, "after")
	var errs []error
	if n := errN[0].Load() + errN[1].Load() + errN[2].Load(); n != 0 {
		errs = append(errs, fmt.Errorf("%d errors for well-behaved clients (want 0)", n))
	}
	if after > limit {
		errs = append(errs, fmt.Errorf("RSS %d KiB did not return within 20 %% of %d KiB", after, warm))
	}
	// The warm value is only a fair baseline if the warm-up round itself
	// gave its memory back: a server that keeps its largest burst would
	// keep it after the warm-up too, and pass the check above.
	if warm > 2*cold {
		errs = append(errs, fmt.Errorf("RSS %d KiB after the warm-up round is more than twice the cold %d KiB: the server kept the round's memory", warm, cold))
	}
	if len(errs) == 0 {
		fmt.Println("soak: PASS")
	}
	return errors.Join(errs...)
}

// fetch reads the soak skill once; n is the result's size.
func fetch(c *iii.Client) (n int, err error) {
	out, err := c.Trigger(context.Background(), iii.TriggerRequest{FunctionID: rules.FnSkillFetch,
		Data: js(map[string]string{"uri": "iii://soak/big"}), Timeout: 30 * time.Second})
	if err == nil && len(out) < 255<<10 {
		err = errors.New("short result")
	}
	return len(out), err
}

// hog is a hostile client: a raw socket that sends fetches and never reads
// its answers. With redial, it dials again whenever the server drops it, as
// a persistent attacker would, until stop is closed.
func hog(url string, stop <-chan struct{}, redial bool, dials, drops *atomic.Int64) {
	for {
		d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 4096}
		ws, _, err := d.Dial(url, nil)
		if err != nil {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		dials.Add(1)
		for i := 0; ; i++ {
			select {
			case <-stop:
				_ = ws.Close()
				return
			default:
			}
			f, _ := json.Marshal(map[string]any{"type": "invokefunction", "invocation_id": uuid.NewString(),
				"function_id": rules.FnSkillFetch, "data": map[string]string{"uri": "iii://soak/big"}})
			_ = ws.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if ws.WriteMessage(websocket.TextMessage, f) != nil {
				break // dropped by the server, as it should be
			}
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		_ = ws.Close()
		drops.Add(1)
		if !redial {
			<-stop
			return
		}
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))].Round(time.Microsecond)
}

// saveProfiles stores the server's heap profile (after a GC; .pb.gz for go
// tool pprof and .txt with the runtime's MemStats) and its goroutines as
// DIR/heap-TAG.* and DIR/goroutine-TAG.txt. Without --pprof-dir it does
// nothing.
func (s *server) saveProfiles(dir, tag string) {
	if dir == "" || s.pprofAddr == "" {
		return
	}
	for name, path := range map[string]string{
		"heap-" + tag + ".pb.gz":    "/debug/pprof/heap?gc=1",
		"heap-" + tag + ".txt":      "/debug/pprof/heap?debug=1",
		"goroutine-" + tag + ".txt": "/debug/pprof/goroutine?debug=1",
		"allocs-" + tag + ".pb.gz":  "/debug/pprof/allocs",
	} {
		if err := download("http://"+s.pprofAddr+path, filepath.Join(dir, name)); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: profile:", err)
		}
	}
}

// saveCPUProfile profiles the server's CPU for d into DIR/name (blocking
// for d). Without --pprof-dir it only waits.
func (s *server) saveCPUProfile(dir, name string, d time.Duration) {
	if dir == "" || s.pprofAddr == "" {
		time.Sleep(d)
		return
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprofAddr, int(d.Seconds()))
	if err := download(url, filepath.Join(dir, name)); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest: profile:", err)
	}
}

// memStats summarises the server's runtime.MemStats (with --pprof-dir).
func (s *server) memStats() string {
	if s.pprofAddr == "" {
		return ""
	}
	resp, err := http.Get("http://" + s.pprofAddr + "/debug/pprof/heap?debug=1")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"# HeapAlloc = ", "# HeapIdle = ", "# HeapReleased = ", "# NumGC = ", "# NextGC = "} {
			if strings.HasPrefix(line, k) {
				out = append(out, strings.TrimPrefix(line, "# "))
			}
		}
	}
	return strings.Join(out, ", ")
}

func download(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
