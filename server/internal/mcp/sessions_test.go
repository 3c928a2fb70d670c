package mcp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/testutil"
)

// A 2025-11-25 session whose client left without a DELETE is closed once
// idle; one whose client keeps a GET stream open for notifications is not.
func TestIdleSessionsAreClosed(t *testing.T) {
	s := newStack(t)
	s.startMCP(skillsmcp.Options{})
	const idle = 300 * time.Millisecond
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{IdleSessionTimeout: idle})

	c := sessionClient{t: t, endpoint: endpoint}
	open, list := c.open, c.list

	gone, streaming := open(), open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", streaming)
		req.Header.Set("Mcp-Protocol-Version", v2025)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			n, err := io.Copy(io.Discard, resp.Body)
			if ctx.Err() == nil {
				t.Errorf("GET stream ended early: HTTP %d, %d bytes, %v", resp.StatusCode, n, err)
			}
			_ = resp.Body.Close()
		}
	}()
	if list(gone) != http.StatusOK || list(streaming) != http.StatusOK {
		t.Fatal("fresh sessions refused")
	}

	time.Sleep(3 * idle)
	open() // any request sweeps
	testutil.Eventually(t, 5*time.Second, "idle session closed (404)", func() bool { return list(gone) == http.StatusNotFound })
	if code := list(streaming); code != http.StatusOK {
		t.Fatalf("session with an open GET stream: HTTP %d, want 200", code)
	}
}

// sessionClient speaks just enough 2025-11-25 Streamable HTTP to open
// sessions and use them.
type sessionClient struct {
	t        *testing.T
	endpoint string
}

func (c sessionClient) post(session, body string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", v2025)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	// Read to the end: closing early cancels the request, and an
	// initialize cancelled midway is closed by the server.
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

func (c sessionClient) open() string {
	c.t.Helper()
	code, id := c.post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v2025+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if code != http.StatusOK || id == "" {
		c.t.Fatalf("initialize: HTTP %d, session %q", code, id)
	}
	if code, _ := c.post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		c.t.Fatalf("initialized: HTTP %d", code)
	}
	return id
}

func (c sessionClient) list(id string) int {
	code, _ := c.post(id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	return code
}

// Abandoned sessions cannot pile up: past MaxSessions, each new session
// closes the one idle the longest.
func TestSessionCapClosesOldestIdleFirst(t *testing.T) {
	s := newStack(t)
	s.startMCP(skillsmcp.Options{})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{MaxSessions: 3, IdleSessionTimeout: -1})
	c := sessionClient{t: t, endpoint: endpoint}
	var ids []string
	for range 5 {
		ids = append(ids, c.open())
	}
	for i, id := range ids {
		want := http.StatusOK
		if i < 2 {
			want = http.StatusNotFound
		}
		if got := c.list(id); got != want {
			t.Errorf("session %d of 5 (cap 3): HTTP %d; want %d", i+1, got, want)
		}
	}
}
