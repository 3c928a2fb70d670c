// Package reachtest stands in for the real engine's iii-bridge worker on
// embedded engines, for tests of several nodes in one process.
package reachtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// Bridge connects a worker to the engine at url that does what the real
// engine's iii-bridge does (engine/src/workers/bridge_client in iii 0.23):
// its function iii.FnBridgeInvoke {function_id, data, timeout_ms} calls
// function_id on the engine at remote, and fails with code bridge_error
// and the client's error as iii's Rust SDK displays it. The worker is
// named iii.BridgeWorkerName, as the real bridge's functions are listed.
// server/internal/clustertest runs the real one. Both connections close
// with the test; the returned func closes them sooner.
func Bridge(tb testing.TB, url, remote string) (closeBridge func()) {
	tb.Helper()
	quiet := iii.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	across := iii.New(remote, iii.WithName("iii-bridge-client"), quiet)
	local := iii.New(url, iii.WithName(iii.BridgeWorkerName), quiet)
	if _, err := local.RegisterFunction(iii.FnBridgeInvoke, func(ctx context.Context, in json.RawMessage) (any, error) {
		var req struct {
			FunctionID string          `json:"function_id"`
			Data       json.RawMessage `json:"data"`
			TimeoutMS  int64           `json:"timeout_ms"`
		}
		if err := json.Unmarshal(in, &req); err != nil || req.FunctionID == "" {
			return nil, iii.NewInvocationError("deserialization_error", fmt.Sprintf("Failed to parse invoke input: %v", err))
		}
		timeout := time.Duration(req.TimeoutMS) * time.Millisecond
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		out, err := across.Trigger(ctx, iii.TriggerRequest{FunctionID: req.FunctionID, Data: req.Data, Timeout: timeout})
		if err != nil {
			return nil, iii.NewInvocationError("bridge_error", iii.RustDisplay(err).Error())
		}
		return out, nil
	}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []*iii.Client{across, local} {
		if err := c.Connect(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	closeBridge = func() {
		_ = local.Close()
		_ = across.Close()
	}
	tb.Cleanup(closeBridge)
	return closeBridge
}
