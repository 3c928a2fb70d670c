package sections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Limits of section reads (iii://fn/… URIs), which run publisher code that
// may itself read sections.
const (
	// DefaultMaxDepth is how many section reads may nest.
	DefaultMaxDepth = 8
	// DefaultMaxBytes is the largest section output served.
	DefaultMaxBytes = 4 << 20
	// MaxInFlight bounds the reads of one section function that
	// are running at once. It is the backstop against recursion through
	// publishers whose clients carry neither invocation metadata nor W3C
	// baggage (the official Node SDK with OpenTelemetry disabled, other
	// clients): a handler that fetches its own URI piles up nested reads
	// of the same function, and the 257th fails at once.
	// Legitimate readers of one section at once stay far below it.
	MaxInFlight = 256
	// chainKey is the invocation metadata key that carries the section
	// functions being read, outermost first. The registry puts it on every
	// section call; a publisher whose client propagates a handler's
	// metadata into its own calls (our Go client does) brings it back on
	// a nested skill::fetch / skills::resources-read, which is how cycles
	// are named exactly.
	chainKey = "iii_skills_section_chain"
	// codeResultTooLarge is the embedded engine's error code for a result
	// frame over its MaxFrameBytes (engine.CodeResultTooLarge).
	codeResultTooLarge = "result_too_large"
)

// Trigger calls a function through the engine (*iii.Client does).
type Trigger interface {
	Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error)
}

// Options are a Guard's limits.
type Options struct {
	// MaxDepth bounds nested section reads (a section handler that
	// fetches sections); zero means DefaultMaxDepth.
	MaxDepth int
	// MaxBytes is the largest section output served; a larger one is
	// refused with "section output too large (N bytes; max M)". Zero
	// means DefaultMaxBytes.
	MaxBytes int
	// Timeout bounds each section call (the registry's state timeout,
	// like upstream).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Guard calls section functions within depth, cycle, concurrency and
// size limits.
type Guard struct {
	trigger  Trigger
	timeout  time.Duration
	log      *slog.Logger
	maxDepth int
	maxBytes int

	mu       sync.Mutex
	inFlight map[string]int
	// inTrace counts the reads of one section function in flight within
	// one W3C trace (see traceparent.go).
	inTrace map[traceRead]int
}

// New returns a Guard calling section functions through t.
func New(t Trigger, o Options) *Guard {
	g := &Guard{trigger: t, timeout: o.Timeout, log: o.Logger, maxDepth: o.MaxDepth, maxBytes: o.MaxBytes,
		inFlight: make(map[string]int), inTrace: make(map[traceRead]int)}
	if g.maxDepth <= 0 {
		g.maxDepth = DefaultMaxDepth
	}
	if g.maxBytes <= 0 {
		g.maxBytes = DefaultMaxBytes
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	return g
}

// sectionChain is the chain of section functions a request was made from
// (empty for a top-level read): from the invocation metadata (our clients
// pass it on), else from the W3C baggage (the official Node and Python
// clients pass that on; see baggage.go). Metadata and baggage entries that
// are not ours are ignored.
func sectionChain(ctx context.Context) []string {
	if chain := chainFromMetadata(ctx); chain != nil {
		return chain
	}
	_, baggage := iii.TraceContextFromContext(ctx)
	return chainFromBaggage(baggage)
}

func chainFromMetadata(ctx context.Context) []string {
	raw, ok := iii.MetadataFromContext(ctx)
	if !ok || len(raw) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m[chainKey] == nil {
		return nil
	}
	var chain []string
	if json.Unmarshal(m[chainKey], &chain) != nil {
		return nil
	}
	return chain
}

func chainText(chain []string) string {
	uris := make([]string, len(chain))
	for i, fn := range chain {
		uris[i] = "iii://fn/" + strings.ReplaceAll(fn, "::", "/")
	}
	return strings.Join(uris, " → ")
}

// ErrSectionCycle: a section read that would read itself again.
func errSectionCycle(chain []string) error {
	return fmt.Errorf("section cycle: %s", chainText(chain))
}

// enter checks the limits for a read of functionID made from chain within
// trace and reserves an in-flight slot; leave must follow when it returns
// nil. inferred says the chain is unknown (the caller passed neither our
// metadata nor our baggage on, but a trace id): reads of functionID already
// in flight in the same trace then count as the levels above this one.
func (g *Guard) enter(chain []string, functionID, trace string, inferred bool) error {
	next := append(slices.Clone(chain), functionID)
	if slices.Contains(chain, functionID) {
		return errSectionCycle(next)
	}
	if len(next) > g.maxDepth {
		return fmt.Errorf("section nesting too deep: %d nested section reads (max %d): %s",
			len(next), g.maxDepth, chainText(next))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[functionID] >= MaxInFlight {
		return fmt.Errorf("too many reads of section %s at once (max %d); does its handler read its own URI? (section cycle suspected)",
			chainText([]string{functionID}), MaxInFlight)
	}
	tr := traceRead{trace, functionID}
	if inferred && g.inTrace[tr] >= g.maxDepth {
		return fmt.Errorf("section nesting too deep: %d nested section reads (max %d): %s read %d times at once in W3C trace %s "+
			"(does its handler read its own URI? its client passes neither invocation metadata nor baggage on, so the nesting is counted by trace)",
			g.inTrace[tr]+1, g.maxDepth, chainText([]string{functionID}), g.inTrace[tr]+1, trace)
	}
	g.inFlight[functionID]++
	g.inTrace[tr]++
	return nil
}

func (g *Guard) leave(functionID, trace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[functionID]--; g.inFlight[functionID] <= 0 {
		delete(g.inFlight, functionID)
	}
	tr := traceRead{trace, functionID}
	if g.inTrace[tr]--; g.inTrace[tr] <= 0 {
		delete(g.inTrace, tr)
	}
}

// errTooLarge is "section output too large (N bytes; max M)".
func (g *Guard) errTooLarge(n int64) error {
	return fmt.Errorf("section output too large (%d bytes; max %d)", n, g.maxBytes)
}

// Call calls section function functionID (with {}) within the limits and
// returns its raw output. The nesting comes from ctx: the invocation
// metadata or W3C baggage of the request that asks for the section.
func (g *Guard) Call(ctx context.Context, functionID string) (json.RawMessage, error) {
	chain := sectionChain(ctx)
	traceparent, baggage := iii.TraceContextFromContext(ctx)
	trace, inferred := traceIDOf(traceparent), chain == nil
	if trace == "" {
		trace, inferred = newTraceID(), false // a trace of its own, for the reads it leads to
		traceparent = childTraceparent(trace)
	}
	if err := g.enter(chain, functionID, trace, inferred); err != nil {
		g.log.Warn("section read refused", "function_id", functionID, "err", err)
		return nil, err
	}
	defer g.leave(functionID, trace)
	next := append(slices.Clone(chain), functionID)
	meta, _ := json.Marshal(map[string][]string{chainKey: next})
	out, err := g.trigger.Trigger(ctx, iii.TriggerRequest{FunctionID: functionID, Data: json.RawMessage("{}"), Timeout: g.timeout,
		Metadata: meta, Baggage: withChain(baggage, next), Traceparent: traceparent})
	var inv *iii.InvocationError
	if errors.As(err, &inv) && inv.Code == codeResultTooLarge {
		var n, max int64
		if _, serr := fmt.Sscanf(inv.Message, "invocation result too large (%d bytes; max %d)", &n, &max); serr == nil {
			return nil, g.errTooLarge(n)
		}
	}
	if err != nil {
		err = registry.ErrTrigger(functionID, iii.RustDisplay(err))
		if inv != nil && inv.Code == iii.CodeFunctionNotFound {
			// No function behind the URI: a verdict on the request.
			return nil, &iii.InvocationError{Code: rules.CodeNotFound, Message: err.Error()}
		}
		return nil, err
	}
	if len(out) > g.maxBytes {
		return nil, g.errTooLarge(int64(len(out)))
	}
	return out, nil
}
