package skillsprotocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// latencies collects per-op durations and reports p50/p99 and ops/s.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, prefix string) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	p := func(q float64) float64 { return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), prefix+"p50-µs")
	b.ReportMetric(p(0.99), prefix+"p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func postRPC(b *testing.B, url string, body []byte) []byte {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkListSkills10K: list_skills (limit 50, summary) over HTTP with
// 10 000 bundles in the catalog, walking the pages.
func BenchmarkListSkills10K(b *testing.B) {
	e := newEnv(b, sp.Options{})
	src, err := e.cat.AddSource("bench", catalog.RankFolder)
	if err != nil {
		b.Fatal(err)
	}
	var entries []*catalog.Entry
	for i := 0; i < 10000; i++ {
		name := fmt.Sprintf("bench.ns%02d.skill%05d", i%50, i)
		toml := fmt.Sprintf("name = %q\nversion = \"1.0.0\"\ndescription = \"Benchmark skill %d\"\nkind = \"instruction\"\n", name, i)
		en, err := sp.BuildEntry(map[string][]byte{"skill.toml": []byte(toml), "SKILL.md": []byte("# Skill\n\nBody.\n")}, catalog.Origin{Kind: catalog.OriginBundle, Source: "bench"}, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, en)
	}
	if err := src.Replace(entries); err != nil {
		b.Fatal(err)
	}
	var lat latencies
	cursor := ""
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		params := map[string]any{"detail": "summary"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "list_skills", "params": params, "id": i})
		start := time.Now()
		out := postRPC(b, e.url, body)
		lat.add(time.Since(start))
		var resp struct {
			Result struct {
				Skills     []json.RawMessage `json:"skills"`
				NextCursor *string           `json:"next_cursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.Result.Skills) == 0 {
			b.Fatalf("list_skills: %s", out)
		}
		cursor = ""
		if resp.Result.NextCursor != nil {
			cursor = *resp.Result.NextCursor
		}
	}
	lat.report(b, "")
}

// BenchmarkExecuteSkill: execute_skill of a trivial Python skill over
// HTTP, end to end (a fresh sandbox per run).
func BenchmarkExecuteSkill(b *testing.B) {
	requireSandbox(b)
	e := newEnv(b, sp.Options{})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","method":"execute_skill","params":{"name":"conf.echo"},"id":1}`)
	postRPC(b, e.url, body) // materialize the bundle once
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out := postRPC(b, e.url, body)
		lat.add(time.Since(start))
		if !bytes.Contains(out, []byte(`"status":"completed"`)) {
			b.Fatalf("run: %s", out)
		}
	}
	lat.report(b, "")
}

// BenchmarkExecuteSkillConcurrent20: 20 runs at a time; any failed run
// fails the benchmark.
func BenchmarkExecuteSkillConcurrent20(b *testing.B) {
	requireSandbox(b)
	e := newEnv(b, sp.Options{})
	if err := e.rt.LoadFolders(fixtures); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","method":"execute_skill","params":{"name":"conf.echo"},"id":1}`)
	postRPC(b, e.url, body)
	var lat latencies
	var failed sync.Map
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for j := 0; j < 20; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				resp, err := http.Post(e.url, "application/json", bytes.NewReader(body))
				if err != nil {
					failed.Store(err.Error(), true)
					return
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat.add(time.Since(start))
				if !bytes.Contains(out, []byte(`"status":"completed"`)) {
					failed.Store(string(out), true)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	failed.Range(func(k, _ any) bool {
		b.Fatalf("failed run among 20 concurrent: %v", k)
		return false
	})
	lat.report(b, "run-")
}
