package iii_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// AcceptAll accepts every binding, with or without a logger, and logs each
// at debug.
func TestAcceptAll(t *testing.T) {
	cfg := iii.TriggerConfig{ID: "b1", FunctionID: "a::b"}
	quiet := iii.AcceptAll(nil, "x::on-change")
	if err := quiet.RegisterTrigger(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := quiet.UnregisterTrigger(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	h := iii.AcceptAll(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "x::on-change")
	if err := h.RegisterTrigger(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := h.UnregisterTrigger(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="subscriber added" trigger_type=x::on-change id=b1 function_id=a::b`, `msg="subscriber removed" trigger_type=x::on-change id=b1`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}

// RustDisplay renders errors as the Rust SDK displays them, so upstream's
// messages that embed them match byte for byte.
func TestRustDisplay(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{iii.NewInvocationError(iii.CodeFunctionNotFound, "Function a::b not found"), "remote error (function_not_found): Function a::b not found"},
		{fmt.Errorf("call: %w", iii.ErrTimeout), "invocation timed out"},
		{context.DeadlineExceeded, "invocation timed out"},
		{errors.New("other"), "other"},
	}
	for _, c := range cases {
		if got := iii.RustDisplay(c.err).Error(); got != c.want {
			t.Errorf("RustDisplay(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A nil trigger type (never registered) fires nothing and fails nothing.
func TestFireJSONOnNilRef(t *testing.T) {
	var ref *iii.TriggerTypeRef
	if err := ref.FireJSON(context.Background(), map[string]string{"op": "register"}); err != nil {
		t.Fatal(err)
	}
}
