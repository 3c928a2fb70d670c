package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// probeTimeout bounds the TCP probe of `skills trigger`: a local engine
// accepts within microseconds, so a second means nothing listens.
const probeTimeout = time.Second

// readPayload returns the JSON text of --payload: the flag's own text, the
// content of FILE for @FILE, or stdin for "-". The file and stdin forms have
// no size limit (a command-line argument stops at the kernel's ~128 KiB).
func readPayload(arg string, stdin io.Reader) ([]byte, error) {
	var (
		body []byte
		from string
		err  error
	)
	switch {
	case arg == "-":
		from = "stdin"
		body, err = io.ReadAll(stdin)
	case strings.HasPrefix(arg, "@"):
		from = arg[1:]
		body, err = os.ReadFile(from)
	default:
		body = []byte(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("--payload: cannot read %s: %w", from, err)
	}
	if !json.Valid(body) {
		if from != "" {
			return nil, fmt.Errorf("--payload: %s is not valid JSON", from)
		}
		return nil, fmt.Errorf("--payload is not valid JSON: %s (use @FILE to read a file, - for stdin)", clip(arg, 200))
	}
	return body, nil
}

// probeEngine dials the engine's TCP address once, so a missing engine is
// reported within a second instead of after the whole --timeout.
func probeEngine(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("--url %q is not a ws:// or wss:// URL", raw)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "wss" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	conn, err := net.DialTimeout("tcp", host, probeTimeout)
	if err != nil {
		return fmt.Errorf("nothing listens at %s; start it with make run (or bin/skills --standalone): %w", raw, err)
	}
	return conn.Close()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
