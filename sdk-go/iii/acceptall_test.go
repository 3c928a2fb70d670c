package iii_test

import (
	"bytes"
	"context"
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
