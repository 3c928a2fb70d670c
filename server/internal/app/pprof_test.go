package app

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// --pprof-addr serves profiles on loopback only.
func TestPprofAddr(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:0", "no-port"} {
		if stop, err := startPprof(addr, quiet); err == nil {
			stop()
			t.Errorf("startPprof(%q) accepted a non-loopback address", addr)
		} else if !strings.Contains(err.Error(), "--pprof-addr") {
			t.Errorf("startPprof(%q): %v does not name the flag", addr, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	stop, err := startPprof(addr, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/cmdline: %s", resp.Status)
	}
}
