package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestPprofServesOnLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		if _, stop, err := startPprof(context.Background(), addr, log); err == nil {
			stop()
			t.Errorf("startPprof(%q) = nil error, want a refusal", addr)
		} else if !strings.Contains(err.Error(), "--pprof-addr") {
			t.Errorf("startPprof(%q) error %q does not name the flag", addr, err)
		}
	}
	bound, stop, err := startPprof(context.Background(), "127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + bound + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET /debug/pprof/heap: %s\n%.200s", resp.Status, body)
	}
}
