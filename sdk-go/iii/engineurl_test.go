package iii

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The engine-address rules are shared with the Node and Python publishers
// (conformance/vectors/engine_urls.json): the three are checked against the
// same cases.
func TestEngineURLVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "vectors", "engine_urls.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Input string  `json:"input"`
			Env   *string `json:"env"`
			URL   string  `json:"url"`
			Error string  `json:"error"`
		} `json:"engine_url"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 20 {
		t.Fatalf("only %d engine_url vectors", len(file.Cases))
	}
	for _, c := range file.Cases {
		env := "unset"
		if c.Env != nil {
			env = *c.Env
		}
		t.Run(c.Input+" env="+env, func(t *testing.T) {
			if c.Env != nil {
				t.Setenv(EngineURLEnv, *c.Env)
			} else {
				t.Setenv(EngineURLEnv, "")
				os.Unsetenv(EngineURLEnv)
			}
			got, err := EngineURL(c.Input)
			switch {
			case c.Error != "" && (err == nil || err.Error() != c.Error):
				t.Fatalf("EngineURL(%q) = %q, %v; want the error %q", c.Input, got, err, c.Error)
			case c.Error == "" && (err != nil || got != c.URL):
				t.Fatalf("EngineURL(%q) = %q, %v; want %q", c.Input, got, err, c.URL)
			}
		})
	}
}

// A client on an address that can never connect stops at once with the
// reason instead of retrying it: Connect, FatalError and calls say why.
func TestMalformedEngineURLStopsTheClientAtOnce(t *testing.T) {
	c := RegisterWorker("http://127.0.0.1:49134", WithName("bad-url"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.Connect(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect = %v, want the address error at once", err)
	}
	want := `iii: invalid engine URL "http://127.0.0.1:49134": the scheme is "http", not ws or wss; expected ws://host:port or wss://host:port`
	if err.Error() != want {
		t.Fatalf("Connect = %q, want %q", err, want)
	}
	if c.FatalError() == nil || c.FatalError().Error() != want {
		t.Fatalf("FatalError = %v", c.FatalError())
	}
	if _, err := c.Trigger(ctx, TriggerRequest{FunctionID: "a::b"}); err == nil || !strings.Contains(err.Error(), "invalid engine URL") {
		t.Fatalf("Trigger = %v, want the address error", err)
	}
	if _, err := c.RegisterFunction("a::b", func(context.Context, json.RawMessage) (any, error) { return nil, nil }); err == nil {
		t.Fatal("RegisterFunction on a stopped client succeeded")
	}
}

// An empty address reads III_URL, as the official SDKs do.
func TestEmptyEngineURLReadsTheEnvironment(t *testing.T) {
	t.Setenv(EngineURLEnv, "ws://127.0.0.1:1")
	c := New("")
	defer c.Close()
	if c.url != "ws://127.0.0.1:1" || c.FatalError() != nil {
		t.Fatalf("url %q, FatalError %v", c.url, c.FatalError())
	}
	t.Setenv(EngineURLEnv, "")
	d := New("")
	defer d.Close()
	if d.url != DefaultEngineURL {
		t.Fatalf("url %q, want %s", d.url, DefaultEngineURL)
	}
}
