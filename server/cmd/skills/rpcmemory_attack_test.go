package main

// Memory for /rpc answers is bounded across requests, over real sockets
// against the skills binary: readers of a 15 MiB folder file that never
// read their answers hold at most their client's share of the answer
// budget (their further requests wait), another client still reads the
// file, and once two stalling clients fill the budget a third is told
// 503 with Retry-After instead of adding its answer to the heap.

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/testutil"
)

func TestAttackStalledReadersCannotTakeTheAnswerMemory(t *testing.T) {
	skills := t.TempDir()
	big := make([]byte, 15<<20)
	_, _ = rand.Read(big)
	writeBundle(t, filepath.Join(skills, "big-demo"), map[string]string{
		"SKILL.md": "---\nname: big-demo\ndescription: A skill with one big file.\n---\n# Big demo\n", "big.bin": string(big)})
	s := startSPServer(t, "", "--skills-folder", skills)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "read_skill_file", "params": map[string]any{"name": "big-demo", "path": "big.bin"}})
	host := strings.TrimPrefix(strings.TrimSuffix(s.rpcURL, "/rpc"), "http://")
	var stalled []net.Conn
	stall := func(ip string, n int) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		for range n {
			c, err := d.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
			t.Cleanup(func() { _ = c.Close() })
			fmt.Fprintf(c, "POST /rpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
			stalled = append(stalled, c)
		}
	}
	clientAt := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	read := func(ip string) (*http.Response, []byte) {
		t.Helper()
		resp, err := clientAt(ip).Post(s.rpcURL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, raw
	}
	readOK := func(ip string) {
		t.Helper()
		resp, raw := read(ip)
		var r struct {
			Result struct {
				Size     int    `json:"size"`
				Encoding string `json:"encoding"`
				Content  string `json:"content"`
			} `json:"result"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != http.StatusOK || r.Error != nil ||
			r.Result.Size != len(big) || r.Result.Encoding != "base64" || len(r.Result.Content) != (len(big)+2)/3*4 {
			t.Fatalf("read from %s: %d %v %v (size %d)", ip, resp.StatusCode, r.Error, err, r.Result.Size)
		}
	}

	stall("127.0.0.1", 32)
	readOK("127.0.0.2")

	// A second stalling client: with both holding their shares, a third
	// client's answer finds no room; after its bounded wait it is told so.
	stall("127.0.0.3", 32)
	var resp *http.Response
	var raw []byte
	testutil.Eventually(t, 60*time.Second, "a read refused while two clients stall", func() bool {
		resp, raw = read("127.0.0.2")
		return resp.StatusCode != http.StatusOK
	})
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(raw), `"code":-32000`) || !strings.Contains(string(raw), "bytes of requests and answers in flight are in use by other requests") {
		t.Fatalf("read with the budget full: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}
	for _, c := range stalled {
		_ = c.Close()
	}
	testutil.Eventually(t, 60*time.Second, "reads served again once the stalled clients left", func() bool {
		resp, _ := read("127.0.0.2")
		return resp.StatusCode == http.StatusOK
	})
	readOK("127.0.0.2")
}
