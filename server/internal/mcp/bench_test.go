package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/kv"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/store"
)

// BenchmarkSkillsList measures skills/list over real HTTP against a
// catalog of 10 000 skills (9 000 published, 1 000 folder skills with
// three files each): one page (the default 1000 entries) and a walk of
// every page. The view computes a published skill's digest on first use
// after a change (the warm-up listing here), so the timed listings only
// look digests up. Reports ops/s, p50/p99 and bytes.
func BenchmarkSkillsList(b *testing.B) {
	c := catalog.New()
	pub, _ := c.AddSource("published", catalog.RankPublished)
	folder, _ := c.AddSource("folder", catalog.RankFolder)
	var pubs, folders []*catalog.Entry
	for i := range 10_000 {
		id := fmt.Sprintf("team-%02d/skill-%05d", i%50, i)
		if i%10 == 0 {
			md := fmt.Sprintf("---\nname: skill-%05d\ndescription: Folder skill number %d\nlicense: MIT\n---\n# Skill %d\n\nSee references/guide.md.\n", i, i, i)
			e := &catalog.Entry{ID: id, Origin: catalog.Origin{Kind: catalog.OriginFolder}}
			raw, body, _ := catalog.SplitFrontmatter(md)
			e.Frontmatter, _ = catalog.ParseFrontmatter(raw)
			e.Body = catalog.Inline(body)
			e.SetSummary(body)
			e.Files = []catalog.File{
				catalog.NewFile("SKILL.md", []byte(md), time.Time{}, nil),
				catalog.NewFile("assets/logo.png", []byte{0x89, 'P', 'N', 'G', byte(i)}, time.Time{}, nil),
				catalog.NewFile("references/guide.md", []byte("# Guide\n"), time.Time{}, nil),
			}
			folders = append(folders, e)
			continue
		}
		body := fmt.Sprintf("# Skill %d\n\nDoes thing number %d for the team.\n", i, i)
		e := &catalog.Entry{ID: id, Body: catalog.Inline(body), Origin: catalog.Origin{Kind: catalog.OriginPublished}}
		e.SetSummary(body)
		pubs = append(pubs, e)
	}
	if err := pub.Put(pubs...); err != nil {
		b.Fatal(err)
	}
	if err := folder.Put(folders...); err != nil {
		b.Fatal(err)
	}
	client := iii.RegisterWorker("ws://127.0.0.1:1", iii.WithLogger(quiet())) // never connected: the extension does not use it
	mem := store.OpenMemory()
	defer mem.Close()
	// The registry over the catalog (not started: the catalog is the
	// benchmark's, not loaded from state).
	reg := core.New(client, core.DefaultConfig(), core.Options{State: kv.Local(mem), Catalog: c, Logger: quiet()})
	defer reg.Close()
	if n, _, _ := reg.CatalogSkills(context.Background(), "", 0); len(n) != 10_000 {
		b.Fatalf("view holds %d skills", len(n))
	}
	srv := skillsmcp.New(client, skillsmcp.Options{Registry: reg, SkillsExtension: true, Logger: quiet()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.ServeHTTP(ctx, ln, skillsmcp.HTTPOptions{}) }()
	endpoint := "http://" + ln.Addr().String() + skillsmcp.Path
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	page := func(cursor string) (next string, n int, err error) {
		// A 2026-07-28 request: the protocol _meta and the Mcp-Method header.
		const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		params := `{` + meta + `}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `",` + meta + `}`
		}
		req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"skills/list","params":`+params+`}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "skills/list")
		resp, err := httpc.Do(req)
		if err != nil {
			return "", 0, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", 0, fmt.Errorf("HTTP %d %v: %.200s", resp.StatusCode, err, body)
		}
		if i := bytes.Index(body, []byte(`"nextCursor":"`)); i >= 0 {
			rest := body[i+len(`"nextCursor":"`):]
			next = string(rest[:bytes.IndexByte(rest, '"')])
		}
		return next, len(body), nil
	}

	run := func(b *testing.B, op func() (int, error)) {
		lat := make([]time.Duration, 0, b.N)
		var bytesOut int
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			t0 := time.Now()
			n, err := op()
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			bytesOut = n
		}
		elapsed := time.Since(start)
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(bytesOut), "resp_bytes")
	}
	b.Run("page=1000", func(b *testing.B) {
		run(b, func() (int, error) { _, n, err := page(""); return n, err })
	})
	b.Run("all=10000", func(b *testing.B) {
		run(b, func() (int, error) {
			total, cursor := 0, ""
			for {
				next, n, err := page(cursor)
				if err != nil {
					return 0, err
				}
				total += n
				if next == "" {
					return total, nil
				}
				cursor = next
			}
		})
	})
}
