package mcp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	skillsmcp "github.com/iii-skills/skills/server/mcp"
)

// A 2025-11-25 session whose client left without a DELETE is closed once
// idle; one whose client keeps a GET stream open for notifications is not.
func TestIdleSessionsAreClosed(t *testing.T) {
	s := newStack(t)
	s.startMCP(skillsmcp.Options{})
	const idle = 300 * time.Millisecond
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{IdleSessionTimeout: idle})

	post := func(session, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", v2025)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read to the end: closing early cancels the request, and an
		// initialize cancelled midway is closed by the server.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	open := func() string {
		t.Helper()
		code, id := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v2025+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: HTTP %d, session %q", code, id)
		}
		if code, _ := post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
			t.Fatalf("initialized: HTTP %d", code)
		}
		return id
	}
	list := func(id string) int {
		code, _ := post(id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		return code
	}

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
	eventually(t, 5*time.Second, func() bool { return list(gone) == http.StatusNotFound }, "idle session closed (404)")
	if code := list(streaming); code != http.StatusOK {
		t.Fatalf("session with an open GET stream: HTTP %d, want 200", code)
	}
}
