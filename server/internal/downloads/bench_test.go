package downloads_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/app"
	"github.com/iii-skills/skills/server/internal/downloads"
	"github.com/iii-skills/skills/server/internal/testutil/appstack"
)

// corpus322 is the shared corpus of 322 skills ($CORPORA/skills-322,
// else beside the repository), or a skip.
func corpus322(b *testing.B) string {
	candidates := []string{"../../../../shared/corpora", "../../../../../shared/corpora"}
	if c := os.Getenv("CORPORA"); c != "" {
		candidates = []string{c}
	}
	for _, d := range candidates {
		if fi, err := os.Stat(filepath.Join(d, "skills-322")); err == nil && fi.IsDir() {
			return filepath.Join(d, "skills-322")
		}
	}
	b.Skip("not run: the shared corpora are absent (set CORPORA to ../shared/corpora)")
	return ""
}

// corpusServer serves the 322 skills as a folder; it returns the listener's
// URL once the catalog stopped growing.
func corpusServer(b *testing.B) string {
	cfg := appstack.Config(b)
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Directory.SkillsFolder = app.FolderList{corpus322(b)}
	srv := appstack.Start(b, cfg)
	last, stable := -1, 0
	for stable < 10 {
		n := len(srv.Catalog.List())
		if n == last && n > 0 {
			stable++
		} else {
			stable = 0
		}
		last = n
		time.Sleep(50 * time.Millisecond)
	}
	return srv.HTTPURL
}

func getIndex(b *testing.B, base string) downloads.Index {
	resp, err := http.Get(base + downloads.IndexPath)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var idx downloads.Index
	if err := json.NewDecoder(resp.Body).Decode(&idx); err != nil || resp.StatusCode != 200 {
		b.Fatalf("index: %d %v", resp.StatusCode, err)
	}
	return idx
}

// The discovery index of the 322-skill corpus: the first request writes
// every multi-file skill's archive once for its digest (cold-ms), later
// ones only list (ns/op, skills listed).
func BenchmarkIndexCorpus322(b *testing.B) {
	base := corpusServer(b)
	start := time.Now()
	idx := getIndex(b, base)
	cold := time.Since(start)
	for b.Loop() {
		getIndex(b, base)
	}
	// After the loop: b.Loop drops metrics reported before it.
	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
	b.ReportMetric(float64(len(idx.Skills)), "skills")
}

// Downloads of every archive the index lists, one after the other: one
// op is one whole archive (bytes/op is its mean size).
func BenchmarkArchiveCorpus322(b *testing.B) {
	base := corpusServer(b)
	idx := getIndex(b, base)
	var urls []string
	for _, e := range idx.Skills {
		if e.Type == downloads.TypeArchive {
			urls = append(urls, base+downloads.WellKnownPrefix+e.URL[2:])
		}
	}
	if len(urls) == 0 {
		b.Skip("not run: no archive in the index")
	}
	var total int64
	i := 0
	for b.Loop() {
		resp, err := http.Get(urls[i%len(urls)])
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", urls[i%len(urls)], resp.StatusCode)
		}
		total += n
		i++
	}
	b.ReportMetric(float64(total)/float64(i), "bytes/archive")
}
