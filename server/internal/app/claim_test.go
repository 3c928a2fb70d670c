package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Our engine replaces a forged caller with the real one, so the probe
// tells the registry to trust the stamp.
func TestCallerProbeTrustsOnlyAnEngineThatStamps(t *testing.T) {
	url := startEngineOnly(t)
	c := iii.New(url, iii.WithName("skills"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = c.Close() })
	if err := registerCallerProbe(c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := claimFunctions(ctx, c, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil || !res.stampsCaller {
		t.Fatalf("claim on our engine: %+v, %v; want the stamp trusted", res, err)
	}
}

// The real engine can answer a call before it has taken a registration
// sent earlier on the same connection: a probe the engine does not list
// yet is asked for again, not a failed start.
func TestCallerProbeNotListedYetIsAskedAgain(t *testing.T) {
	url := startEngineOnly(t)
	c := iii.New(url, iii.WithName("skills"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	// The probe arrives late, as if the engine took its registration after
	// answering the first call.
	late := time.AfterFunc(300*time.Millisecond, func() {
		if err := registerCallerProbe(c); err != nil {
			t.Error(err)
		}
	})
	defer late.Stop()
	res, err := claimFunctions(ctx, c, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil || !res.stampsCaller {
		t.Fatalf("claim with a probe registered late: %+v, %v; want it found on a later try", res, err)
	}
	// Past the claim's bound the miss is the error (c, which holds the
	// probe, gone first).
	_ = c.Close()
	c2 := iii.New(url, iii.WithName("skills-2"), iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = c2.Close() })
	if err := c2.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := claimFunctions(ctx, c2, 500*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), nil); err == nil || !notFound(err) {
		t.Fatalf("claim without a probe: %v; want function_not_found once the bound passed", err)
	}
}
