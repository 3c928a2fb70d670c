// Package testutil holds the helpers that the server's tests in several
// packages need alike: a free loopback address, a buffer that a process or
// logger writes while the test reads it, polling until a condition holds
// (Eventually), the skills binary built once per test process
// (SkillsBinary, BuildSkills) and a process's resident memory read from
// /proc (ProcStatus, SelfRSS, SettledRSS). It is imported by tests only.
// The whole server started for a test is in package appstack (it imports
// server/internal/app, which testutil cannot: the packages app assembles use
// testutil in their internal tests, and that would be an import cycle).
package testutil

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback host:port that nothing listens on right now.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Buffer is a bytes.Buffer safe for one writer and concurrent readers:
// a child process's output or a slog handler's sink.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
