package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
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

func runTrigger(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills trigger", flag.ContinueOnError)
	functionID := fs.String("function-id", "", "Function to call (required)")
	payload := fs.String("payload", "{}", "JSON payload: the JSON text itself, @FILE to read it from a file, or - to read stdin (no size limit)")
	engineURL := fs.String("url", envOr("III_URL", iii.DefaultEngineURL), "WebSocket URL of the iii engine")
	timeout := fs.Duration("timeout", 30*time.Second, "How long to wait for the engine and the result")
	engineToken := fs.String("engine-token", os.Getenv(engineTokenEnv), "Worker token the engine requires (env "+engineTokenEnv+")")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *functionID == "" {
		fmt.Fprintln(stderr, "skills trigger: --function-id is required (for example --function-id "+rules.FnSkillsList+")")
		return 2
	}
	body, err := readPayload(*payload, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "skills trigger: %v\n", err)
		return 2
	}
	// Say at once when nothing listens instead of retrying until --timeout.
	if err := probeEngine(*engineURL); err != nil {
		fmt.Fprintf(stderr, "skills trigger: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	client := iii.RegisterWorker(*engineURL, iii.WithName("skills-trigger"), iii.WithAnonymous(),
		iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), withEngineToken(*engineToken))
	defer client.Close()
	if err := client.Connect(ctx); err != nil {
		fmt.Fprintf(stderr, "skills trigger: cannot reach the iii engine at %s: %v\n", *engineURL, err)
		return 1
	}
	out, err := client.Trigger(ctx, iii.TriggerRequest{FunctionID: *functionID, Data: json.RawMessage(body), Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "skills trigger: %s: %v\n", *functionID, err)
		return 1
	}
	fmt.Fprintln(stdout, prettyOrRaw(out))
	return 0
}

// prettyOrRaw indents a JSON result; a string result prints as its text so
// markdown (skill::fetch) reads naturally.
func prettyOrRaw(out json.RawMessage) string {
	if len(bytes.TrimSpace(out)) == 0 {
		return "null"
	}
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, out, "", "  ") != nil {
		return string(out)
	}
	return strings.TrimRight(buf.String(), "\n")
}
