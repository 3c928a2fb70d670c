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
