package xproc

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// Versions, measured like BenchmarkRegister and BenchmarkFetch:
// a `skills --standalone` process called from this one.
//
// BenchmarkRegister above registers a new id per call, so on a registry
// with history each of its calls creates a version 1. The rows here add a
// changed body at an existing id (version N+1) and an unchanged body (no
// version), and reads with and without a selector.

// BenchmarkRegisterVersion registers 2 KiB bodies at 1 000 existing ids
// with 64 writers: changed=yes makes every call a new version, changed=no
// re-registers the same body (what every worker does at boot).
func BenchmarkRegisterVersion(b *testing.B) {
	const writers, ids = 64, 1000
	for _, changed := range []bool{true, false} {
		name := "changed=no"
		if changed {
			name = "changed=yes"
		}
		b.Run(name+fmt.Sprintf("/writers=%d", writers), func(b *testing.B) {
			skills := startSkills(b, b.TempDir())
			clients := make([]*iii.Client, writers)
			for i := range clients {
				clients[i] = dial(b, skills.url)
			}
			parallelRegister(b, clients, ids, versionedID, body2K)
			var seq atomic.Int64
			ops := make([]func() error, writers)
			for i, c := range clients {
				// A writer registers the ids it owns (parallelRegister gave
				// client i the ids i, i+writers, …): another worker's id is
				// refused while its owner is connected.
				k := 0
				ops[i] = func() error {
					n := int(seq.Add(1))
					id := i + writers*(k%(ids/writers))
					k++
					body := body2K(id)
					if changed {
						body = body2K(ids + n) // a header no earlier call had
					}
					return call(c, rules.FnSkillsRegister, map[string]string{"id": "v/s" + strconv.Itoa(id), "skill": body})
				}
			}
			pid := skills.cmd.Process.Pid
			srv0 := procCPU(b, pid)
			measure(b, ops)
			b.ReportMetric(float64((procCPU(b, pid)-srv0).Microseconds())/float64(b.N), "server_cpu_µs/op")
		})
	}
}

// parallelRegister registers skills id(0)…id(n-1) with body(i), one writer
// per client; client c registers the indexes c, c+len(clients), … (the
// registry keeps an id to the worker that registered it while it is
// connected, so a re-registration must come from the same client).
func parallelRegister(b *testing.B, clients []*iii.Client, n int, id, body func(i int) string) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for ci, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := ci; i < n; i += len(clients) {
				if err := call(c, rules.FnSkillsRegister, map[string]string{"id": id(i), "skill": body(i)}); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReadSelector reads one 2 KiB skill through skills::resources-read
// plainly (iii://id), by version (iii://id@1) and by label
// (iii://id@production), 1 and 64 callers.
func BenchmarkReadSelector(b *testing.B) {
	skills := startSkills(b, b.TempDir())
	c0 := dial(b, skills.url)
	const ids = 100
	for i := range ids {
		id := "v/s" + strconv.Itoa(i)
		if err := call(c0, rules.FnSkillsRegister, map[string]string{"id": id, "skill": body2K(i)}); err != nil {
			b.Fatal(err)
		}
		if err := call(c0, "skills::label", map[string]any{"id": id, "label": "production", "version": 1}); err != nil {
			b.Fatal(err)
		}
	}
	for _, sel := range []string{"", "@1", "@production"} {
		for _, callers := range []int{1, 64} {
			name := "plain"
			if sel != "" {
				name = "selector=" + sel[1:]
			}
			b.Run(fmt.Sprintf("%s/callers=%d", name, callers), func(b *testing.B) {
				ops := make([]func() error, callers)
				var seq atomic.Int64
				for i := range ops {
					c := dial(b, skills.url)
					ops[i] = func() error {
						uri := "iii://v/s" + strconv.Itoa(int(seq.Add(1))%ids) + sel
						return call(c, rules.FnSkillsResourcesRead, map[string]string{"uri": uri})
					}
				}
				// The server's CPU per read: what a selector adds, less
				// blurred than the rate by the client's share of the cores.
				pid := skills.cmd.Process.Pid
				srv0 := procCPU(b, pid)
				measure(b, ops)
				b.ReportMetric(float64((procCPU(b, pid)-srv0).Microseconds())/float64(b.N), "server_cpu_µs/op")
			})
		}
	}
}

// BenchmarkHistoryMemory10Kx10 registers 10 000 skills of 2 KiB, then nine
// more versions of each (10 versions × 2 KiB of history per skill, 195 MiB
// of bodies in all), and reports the process's resident growth over the
// nine rounds against the bodies' bytes (target ≤ 10 %: history lives in
// the store, not on the heap). rss_anon is the heap's share; rss_file is
// the state file's pages bbolt's map touched.
func BenchmarkHistoryMemory10Kx10(b *testing.B) {
	const n, versions = 10000, 10
	skills := startSkills(b, b.TempDir())
	pid := skills.cmd.Process.Pid
	clients := make([]*iii.Client, 64)
	for i := range clients {
		clients[i] = dial(b, skills.url)
	}
	round := func(r int) {
		parallelRegister(b, clients, n, versionedID, func(i int) string { return body2K(r*n + i) })
	}
	round(0)
	before := testutil.SettledRSS(b, pid)
	anon0, file0 := testutil.ProcStatus(b, pid, "RssAnon"), testutil.ProcStatus(b, pid, "RssFile")
	for r := 1; r < versions; r++ {
		round(r)
	}
	after := testutil.SettledRSS(b, pid)
	anon, file := testutil.ProcStatus(b, pid, "RssAnon"), testutil.ProcStatus(b, pid, "RssFile")
	bodies := float64(n * versions * 2048)
	b.Run(fmt.Sprintf("skills=%d/versions=%d", n, versions), func(b *testing.B) {
		for range b.N {
			if err := call(clients[0], rules.FnSkillsResourcesRead, map[string]string{"uri": "iii://v/s1@3"}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(after-before)/(1<<20), "rss_growth_MiB")
		b.ReportMetric(float64(after-before)/bodies, "rss_growth_per_body_byte")
		b.ReportMetric(float64(anon-anon0)/(1<<20), "rss_anon_growth_MiB")
		b.ReportMetric(float64(file-file0)/(1<<20), "rss_file_growth_MiB")
		b.ReportMetric(bodies/(1<<20), "bodies_MiB")
	})
}

// versionedID and nestedID name the i-th skill of a benchmark.
func versionedID(i int) string { return "v/s" + strconv.Itoa(i) }

func nestedID(i int) string { return "w" + strconv.Itoa(i/100) + "/s" + strconv.Itoa(i) }
