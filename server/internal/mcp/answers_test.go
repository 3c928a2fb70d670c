package mcp_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/catalog"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// TestBigReadsShareTheAnswerBudget: over real HTTP, a read of a big skill
// file holds its cost of the answer budget until its response is written.
// While a client that does not read its answer holds the whole budget,
// another client's read waits, then is refused with -32000,
// data.retry_after_ms and a Retry-After header; the first client's next
// read queues behind its own earlier one and is answered once that
// answer is read; then the budget is empty again.
func TestBigReadsShareTheAnswerBudget(t *testing.T) {
	s := newStack(t)
	c := catalog.New()
	folder, _ := c.AddSource("folder", catalog.RankFolder)
	big := make([]byte, 6<<20) // base64 in the answer: 8 MiB, more than loopback buffers hold
	_, _ = rand.Read(big)
	if err := folder.Put(folderEntry(t, "big-demo", map[string][]byte{
		"SKILL.md": []byte("---\nname: big-demo\ndescription: One big file\n---\n# Big\n"), "big.bin": big})); err != nil {
		t.Fatal(err)
	}
	view := skillsext.NewView(c)
	t.Cleanup(view.Close)
	pool := budget.New("bytes of answers in flight", 24<<20, 24<<20) // one 6 MiB read costs 24 MiB: the whole budget
	s.startMCPView(view, skillsmcp.Options{AnswerBudget: pool, AnswerWait: 300 * time.Millisecond})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})

	read := func(client *http.Client) *http.Response {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read",
			"params": newMeta(map[string]any{"uri": "skill://big-demo/big.bin"})})
		req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": v2026, "Mcp-Method": "resources/read", "Mcp-Name": "skill://big-demo/big.bin"} {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// A client with a tiny receive buffer that does not read its answer.
	slow := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}).DialContext}}
	held := read(slow) // headers arrive once the read was granted its cost
	defer held.Body.Close()
	if used := pool.Used(); used != 24<<20 {
		t.Fatalf("the unread answer holds %d bytes of the budget, want %d", used, 24<<20)
	}

	// Another client (address) is refused after the wait.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp := read(other)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"code":-32000`) || !strings.Contains(string(b), `"retry_after_ms":1000`) ||
		!strings.Contains(string(b), "the server is busy") || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a read while the budget is full: HTTP %d, Retry-After %q: %.300s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}

	// The first client's next read waits for its own earlier answer.
	second := make(chan *http.Response, 1)
	go func() { second <- read(&http.Client{}) }()
	select {
	case r := <-second:
		r.Body.Close()
		t.Fatal("a read of the same client was answered while its earlier answer holds the budget")
	case <-time.After(500 * time.Millisecond):
	}
	if n, err := io.Copy(io.Discard, held.Body); err != nil || n < 8<<20 {
		t.Fatalf("reading the held answer: %d bytes, %v", n, err)
	}
	resp = <-second
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"blob":"`) {
		t.Fatalf("the queued read: HTTP %d: %.300s", resp.StatusCode, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pool.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if used := pool.Used(); used != 0 {
		t.Fatalf("after the answers were written the budget still holds %d bytes", used)
	}
}
