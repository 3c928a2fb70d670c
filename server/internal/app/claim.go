package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// DefaultResultResend is how long after a result the worker sends it
// again against an external engine (docs/upstream-engine-race.md).
const DefaultResultResend = 50 * time.Millisecond

// DefaultClaimTimeout bounds how long the worker keeps asking for function
// ids another worker holds before it exits (--claim-timeout).
const DefaultClaimTimeout = 30 * time.Second

// fnIdentity is our engine's identity built-in; on an engine that lacks it
// the call still serves as the round trip claimFunctions needs.
const fnIdentity = iii.FnWorkerIdentity

// claimResult is what claimFunctions learned about the engine.
type claimResult struct {
	// stampsCaller: the engine replaces a client's engine.CallerKey
	// metadata with the real caller (probeCallerStamp), so the registry
	// may trust it.
	stampsCaller bool
}

// registerCallerProbe registers rules.FnCallerProbe (before Connect, like every
// registry function).
func registerCallerProbe(client *iii.Client) error {
	_, err := client.RegisterFunction(rules.FnCallerProbe, func(ctx context.Context, _ json.RawMessage) (any, error) {
		var m map[string]json.RawMessage
		var c struct {
			WorkerID string `json:"worker_id"`
		}
		if meta, ok := iii.MetadataFromContext(ctx); ok && json.Unmarshal(meta, &m) == nil {
			_ = json.Unmarshal(m[engine.CallerKey], &c)
		}
		return c.WorkerID, nil
	}, iii.RegisterFunctionOptions{
		Description: "Internal: tells the registry whether its engine stamps the caller into invocation metadata.",
		Metadata:    iii.InternalMetadata,
	})
	return err
}

// probeCallerStamp calls our own probe with a forged caller: an engine
// that stamps the caller (ours) replaces it with our worker id; one that
// passes metadata through leaves the forgery. Asking the engine itself
// (engine::workers::identity) would not do: on an engine that does not
// reserve engine::* ids, anyone could answer for it.
func probeCallerStamp(ctx context.Context, client *iii.Client) (bool, error) {
	const forged = "forged-by-the-probe"
	meta, _ := json.Marshal(map[string]any{engine.CallerKey: map[string]string{"worker_id": forged}})
	out, err := triggerPatiently(ctx, client, iii.TriggerRequest{FunctionID: rules.FnCallerProbe, Data: json.RawMessage(`{}`), Metadata: meta})
	if err != nil {
		return false, fmt.Errorf("the registry's caller probe failed: %w", err)
	}
	var got string
	_ = json.Unmarshal(out, &got)
	return got != "" && got == client.WorkerID(), nil
}

// claimFunctions makes sure the engine accepted every function the client
// registered before the worker says it is ready. A round trip orders the
// check after the replayed registrations; each function another worker
// holds is logged with its owner (and told to status, which /readyz
// reads; nil: none) and asked for again with capped backoff (the holder
// may be leaving) until bound, then it fails naming the holders, so a
// registry that cannot serve its own ids never claims to.
func claimFunctions(ctx context.Context, client *iii.Client, bound time.Duration, log *slog.Logger, status *claimStatus) (claimResult, error) {
	if bound <= 0 {
		bound = DefaultClaimTimeout
	}
	deadline := time.Now().Add(bound)
	delay := 250 * time.Millisecond
	var res claimResult
	for attempt := 1; ; attempt++ {
		_, err := triggerPatiently(ctx, client, iii.TriggerRequest{FunctionID: fnIdentity, Data: json.RawMessage(`{}`)})
		switch {
		case err == nil, notFound(err):
			// Any answer will do: it orders the check after the replay.
		case ctx.Err() != nil:
			return res, ctx.Err()
		default:
			return res, fmt.Errorf("no answer from the engine after registering: %w", err)
		}
		refused := client.RefusedFunctions()
		types := heldTriggerTypes(ctx, client)
		if len(refused) == 0 && len(types) == 0 {
			// The probe is one of our functions: only now is it ours.
			res.stampsCaller, err = probeCallerStamp(ctx, client)
			if err != nil && !(notFound(err) && time.Until(deadline) > 0) {
				return res, err
			}
			if err == nil {
				if attempt > 1 {
					log.Info("every registry function and trigger type is registered now", "attempts", attempt)
				}
				return res, nil
			}
			// The real engine can answer a call before it has taken a
			// registration sent earlier on the same connection: ask again.
			log.Info("the engine does not list the registry's caller probe yet; asking again", "attempt", attempt)
			if !sleepCtx(ctx, min(delay, time.Until(deadline))) {
				return res, ctx.Err()
			}
			delay = min(delay*2, 5*time.Second)
			continue
		}
		held := describeHolders(ctx, client, refused)
		for i, r := range refused {
			log.Error("another worker holds a function of the registry; not ready", "function_id", r.FunctionID,
				"owner_worker_id", r.OwnerWorkerID, "owner", held[i], "reason", r.Reason, "attempt", attempt)
		}
		for _, t := range types {
			log.Error("another worker provides a trigger type of the registry; not ready (ours is on standby)", "trigger_type", t, "attempt", attempt)
		}
		held = append(held, types...)
		status.held(held)
		left := time.Until(deadline)
		if left <= 0 {
			return res, fmt.Errorf("the engine gave %d of the registry's functions and trigger types to other workers for %s: %s; stop the worker that holds them or point --url at another engine (--claim-timeout sets how long to wait)",
				len(held), bound, strings.Join(held, "; "))
		}
		if !sleepCtx(ctx, min(delay, left)) {
			return res, ctx.Err()
		}
		delay = min(delay*2, 5*time.Second)
		client.RetryRefusedFunctions()
	}
}

// notFound reports whether err is the engine's function_not_found.
func notFound(err error) bool {
	var ie *iii.InvocationError
	return errors.As(err, &ie) && ie.Code == iii.CodeFunctionNotFound
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// describeHolders says who holds each refused function: "skills::list is
// held by worker <id> (name <name>)", the engine itself, or the token.
func describeHolders(ctx context.Context, client *iii.Client, refused []*iii.RegistrationRejectedError) []string {
	names := workerNames(ctx, client)
	out := make([]string, len(refused))
	for i, r := range refused {
		switch {
		case r.Reason != "":
			out[i] = r.FunctionID + " is refused: " + r.Reason
		case r.OwnerWorkerID == "":
			out[i] = r.FunctionID + " is reserved by the engine"
		case names[r.OwnerWorkerID] != "":
			out[i] = fmt.Sprintf("%s is held by worker %s (name %q)", r.FunctionID, r.OwnerWorkerID, names[r.OwnerWorkerID])
		default:
			out[i] = fmt.Sprintf("%s is held by worker %s", r.FunctionID, r.OwnerWorkerID)
		}
	}
	return out
}

// workerNames maps worker ids to names from engine::workers::list (best
// effort: nil when the engine does not answer).
func workerNames(ctx context.Context, client *iii.Client) map[string]string {
	var list struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	if (invoke.Caller{Client: client, Timeout: 5 * time.Second}).Call(ctx, iii.FnListWorkers, nil, &list) != nil {
		return nil
	}
	names := make(map[string]string, len(list.Workers))
	for _, w := range list.Workers {
		names[w.StringID()] = w.StringName()
	}
	return names
}

// reclaimOnReconnect runs claimFunctions on every later connection (an
// engine that restarted may have let another worker take the ids first),
// hands what its probe found to setStamped (the engine may be another one
// now), keeps status (and with it /readyz) at "not ready" until the claim
// of the current connection succeeded, and reports a failure on the
// returned channel.
func reclaimOnReconnect(ctx context.Context, client *iii.Client, bound time.Duration, log *slog.Logger, setStamped func(bool), status *claimStatus) <-chan error {
	failed := make(chan error, 1)
	var seen atomic.Int32
	// Called right after the claim on the current connection succeeded;
	// its first hook below names that connection.
	status.claimed(context.Background())
	client.OnConnect(func(cctx context.Context) {
		if seen.Add(1) == 1 {
			status.claimed(cctx) // the connection claimFunctions has just checked
			return
		}
		status.claiming()
		res, err := claimFunctions(cctx, client, bound, log, status)
		if err == nil {
			setStamped(res.stampsCaller)
			status.claimed(cctx)
		} else {
			status.failed(err)
		}
		if err != nil && cctx.Err() == nil && ctx.Err() == nil {
			select {
			case failed <- err:
			default:
			}
		}
	})
	return failed
}

// heldTriggerTypes names the client's trigger types another worker
// provides ("skills::on-change is provided by worker <id>"). The engine
// answers registertriggertype with nothing and keeps a second provider on
// standby, so only our engine's engine::triggers::info (provider_worker_id)
// tells; another engine's answer lacks the key and is not judged. The
// standby registration takes over when the holder leaves.
func heldTriggerTypes(ctx context.Context, client *iii.Client) []string {
	var out []string
	me := client.WorkerID()
	engine := invoke.Caller{Client: client, Timeout: 5 * time.Second}
	for _, id := range client.TriggerTypeIDs() {
		var info iii.TriggerTypeDetail
		switch err := engine.Call(ctx, iii.FnInfoTriggers, map[string]string{"id": id}, &info); {
		case err != nil:
			// Not ours to judge: an engine without the type's info (or
			// an answer that is not one).
		case info.ProviderWorkerID == nil:
		case *info.ProviderWorkerID != me:
			out = append(out, fmt.Sprintf("trigger type %s is provided by worker %s", id, *info.ProviderWorkerID))
		}
	}
	return out
}

// triggerPatiently makes a call of claimFunctions, asking up to three times
// when an answer does not come within 5 s: the real iii engine can lose the
// result of a call answered very fast (docs/upstream-engine-race.md), and losing
// one must not stop the worker.
func triggerPatiently(ctx context.Context, client *iii.Client, req iii.TriggerRequest) (json.RawMessage, error) {
	var err error
	for try := 0; try < 3; try++ {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var out json.RawMessage
		out, err = client.Trigger(callCtx, req)
		timedOut := callCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil || !timedOut {
			return out, err
		}
	}
	return nil, err
}

// claimStatus is what /readyz knows of the claim of the registry's ids:
// ready only while the connection whose claim succeeded is the current
// one. After a reconnect (an engine restart, say) it is not ready until
// the new claim succeeded, and while another worker holds registry ids it
// says which and who: an engine the registry cannot reserve its ids on
// (the real iii engine) may have handed them to a waiting client.
type claimStatus struct {
	mu   sync.Mutex
	conn context.Context // the connection claimed on; nil: none
	err  error           // why not, while conn is nil
}

// errClaiming is the status before the first claim and after a reconnect.
var errClaiming = errors.New("claiming the registry's functions and trigger types on the engine connection")

// Ready is a health.Check.
func (s *claimStatus) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conn != nil && s.conn.Err() == nil:
		return nil
	case s.conn != nil, s.err == nil:
		return errClaiming // the claimed connection ended: a new one claims again
	}
	return s.err
}

func (s *claimStatus) claimed(conn context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.conn, s.err = conn, nil
	s.mu.Unlock()
}

func (s *claimStatus) claiming() { s.failed(errClaiming) }

// held records who holds what ("skills::list is held by worker … (name
// …)"), as the log says it.
func (s *claimStatus) held(holders []string) {
	s.failed(fmt.Errorf("other workers hold %d of the registry's functions and trigger types: %s",
		len(holders), strings.Join(holders, "; ")))
}

func (s *claimStatus) failed(err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.conn, s.err = nil, err
	s.mu.Unlock()
}

// privateScopes are the state scopes the embedded engine lets only the
// registry write (engine.Config.PrivateScopes): its version history, its
// cluster counter, the shared copies of published bundles, and its read
// counts, webhook queues and change feed.
func privateScopes(cfg Config) []string {
	if cfg.Engine.Only {
		// No registry runs inside this engine: the registry that connects
		// as a worker keeps its history in these scopes.
		return nil
	}
	skills := cfg.Registry.Scopes.Skills
	return append(cfg.Registry.PrivateScopes(), skillsprotocol.SharedBundleScope,
		usageScope(skills), webhooksScope(skills), changesScope(skills))
}
