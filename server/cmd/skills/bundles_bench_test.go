package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// settledRSS samples the resident set (VmRSS, and RssAnon: the heap and
// stacks, without mapped files; KiB) every second until two samples differ
// by less than 1 MiB (the server gives memory back after a burst), at
// most 20 s.
func settledRSS(tb testing.TB, pid int) (rss, anon int64) {
	tb.Helper()
	sample := func() (rss, anon int64) {
		return testutil.ProcStatus(tb, pid, "VmRSS") >> 10, testutil.ProcStatus(tb, pid, "RssAnon") >> 10
	}
	prev, _ := sample()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		rss, anon = sample()
		if d := rss - prev; d < 1024 && d > -1024 {
			return rss, anon
		}
		prev = rss
	}
	return rss, anon
}

// BenchmarkPublishedBundlesRSS is the published-bundles memory attack measured from
// outside the server: five bundles of 11 MiB (incompressible) published
// over iii, then a restart. Reported: the server's VmRSS and RssAnon (MB)
// idle, after the publishes, and after the restart. Run once:
//
//	go test -run '^$' -bench PublishedBundlesRSS -benchtime 1x ./server/cmd/skills
func BenchmarkPublishedBundlesRSS(b *testing.B) {
	dir := b.TempDir()
	data, config := dir+"/data", dir+"/config.yaml"
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	start := func() (*spServer, int) {
		engineAddr, httpAddr := testutil.FreeAddr(b), testutil.FreeAddr(b)
		cmd, logs := startSkills(b, "--standalone", "--url", "ws://"+engineAddr, "--data", data, "--config", config, "--mcp-addr", httpAddr)
		waitListening(b, httpAddr, logs)
		return &spServer{url: "ws://" + engineAddr, cmd: cmd, logs: logs}, cmd.Process.Pid
	}
	for i := 0; i < b.N; i++ {
		_ = os.RemoveAll(data)
		s, pid := start()
		idle, idleAnon := settledRSS(b, pid)
		c := connectAttacker(b, s.url)
		for n := 0; n < 5; n++ {
			pad := make([]byte, 11<<20)
			_, _ = rand.Read(pad)
			files := bundleFiles(fmt.Sprintf("bench.big%d", n), "1.0.0", "big")
			list := []skillsprotocol.BundleFile{{Path: "resources/pad.bin", Content: base64.StdEncoding.EncodeToString(pad), Encoding: "base64"}}
			for p, content := range files {
				list = append(list, skillsprotocol.BundleFile{Path: p, Content: content})
			}
			if _, err := triggerTB(b, c, rules.FnPublishBundle, skillsprotocol.PublishRequest{Files: list}); err != nil {
				b.Fatalf("publish %d: %v", n, err)
			}
		}
		published, publishedAnon := settledRSS(b, pid)
		_ = c.Close()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
		_, pid = start()
		restarted, restartedAnon := settledRSS(b, pid)
		b.ReportMetric(float64(idle)/1024, "idle-rss-MB")
		b.ReportMetric(float64(published)/1024, "published-rss-MB")
		b.ReportMetric(float64(restarted)/1024, "restarted-rss-MB")
		b.ReportMetric(float64(idleAnon)/1024, "idle-anon-MB")
		b.ReportMetric(float64(publishedAnon)/1024, "published-anon-MB")
		b.ReportMetric(float64(restartedAnon)/1024, "restarted-anon-MB")
	}
}
