package reach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

const (
	// bridgeMargin is how much longer a call through the bridge waits
	// than the bridge's own timeout, so that the bridge's answer (its
	// timeout included) is the one that arrives.
	bridgeMargin = 2 * time.Second
	// defaultCallTimeout is the bridge's own default (30 s), used when a
	// request names none.
	defaultCallTimeout = 30 * time.Second
	// codeBridgeError is the iii-bridge's error code; its message is the
	// remote call's error as iii's Rust SDK displays it.
	codeBridgeError = "bridge_error"
	// DeployDoc is where operators read how prompts and sections reach
	// across engines.
	DeployDoc = `docs/deploy.md, "Prompts and sections across engines"`
)

// remoteError is how iii's Rust SDK displays an error the other engine
// answered: "remote error (<code>): <message>".
var remoteError = regexp.MustCompile(`^remote error \(([A-Za-z0-9_.:-]+)\): (?s)(.*)$`)

// Trigger calls req.FunctionID where the Follower last saw it: on this
// registry's engine, else through the engine's iii-bridge. When the first
// way answers function_not_found (the sets lag the engines by up to one
// event) the other is tried once; a function found neither way answers
// function_not_found with a message naming the nodes that hold it (Explain).
func (f *Follower) Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	p := f.Where(req.FunctionID)
	viaBridge := p.Known && !p.Local && p.Bridge
	var out json.RawMessage
	var err error
	if viaBridge {
		out, err = f.bridgeCall(ctx, req)
	} else {
		out, err = f.client.Trigger(ctx, req)
	}
	if !notFound(err) {
		return out, err
	}
	f.nudge() // a set may be behind
	switch {
	case viaBridge:
		out, err = f.client.Trigger(ctx, req)
	case f.Bridge():
		out, err = f.bridgeCall(ctx, req)
	}
	if notFound(err) {
		return nil, f.notFoundError(req.FunctionID, err)
	}
	return out, err
}

// bridgeCall calls req.FunctionID on the engine across this engine's
// iii-bridge (iii.FnBridgeInvoke), with req's timeout. The bridge's
// errors read as the other engine's own: its code and message.
func (f *Follower) bridgeCall(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	data := req.Data
	if len(data) == 0 {
		data = json.RawMessage(`{}`)
	}
	payload, err := json.Marshal(struct {
		FunctionID string          `json:"function_id"`
		Data       json.RawMessage `json:"data"`
		TimeoutMS  int64           `json:"timeout_ms"`
	}{req.FunctionID, data, timeout.Milliseconds()})
	if err != nil {
		return nil, fmt.Errorf("call %s through the iii-bridge: %w", req.FunctionID, err)
	}
	out, err := f.client.Trigger(ctx, iii.TriggerRequest{FunctionID: iii.FnBridgeInvoke, Data: payload,
		Timeout: timeout + bridgeMargin, Metadata: req.Metadata, Traceparent: req.Traceparent, Baggage: req.Baggage})
	return out, bridgeError(req.FunctionID, err)
}

// bridgeError turns an error of iii.FnBridgeInvoke into the error of the
// function it called: "remote error (<code>): <message>" becomes that
// code and message, the bridge's "invocation timed out" a timeout, and a
// bridge that is gone (its own function_not_found) the function's
// function_not_found.
func bridgeError(functionID string, err error) error {
	var inv *iii.InvocationError
	if err == nil || !errors.As(err, &inv) {
		return err
	}
	switch {
	case inv.Code == iii.CodeFunctionNotFound:
		return &iii.InvocationError{Code: iii.CodeFunctionNotFound, Message: fmt.Sprintf("Function %s not found", functionID)}
	case inv.Code != codeBridgeError:
		return err
	case inv.Message == "invocation timed out":
		return iii.ErrTimeout
	}
	if m := remoteError.FindStringSubmatch(inv.Message); m != nil {
		return &iii.InvocationError{Code: m[1], Message: m[2]}
	}
	return &iii.InvocationError{Code: codeBridgeError, Message: "through the iii-bridge: " + inv.Message}
}

// bridgeTrigger calls through the bridge (for listings of the engine
// across it).
type bridgeTrigger struct{ f *Follower }

func (b bridgeTrigger) Trigger(ctx context.Context, req iii.TriggerRequest) (json.RawMessage, error) {
	return b.f.bridgeCall(ctx, req)
}

func notFound(err error) bool {
	var inv *iii.InvocationError
	return errors.As(err, &inv) && inv.Code == iii.CodeFunctionNotFound
}

// notFoundError is err (function_not_found) with Explain appended, when
// there is more to say than that the function is missing: on shared state
// or with a bridge.
func (f *Follower) notFoundError(functionID string, err error) error {
	why := f.Explain(functionID)
	var inv *iii.InvocationError
	if why == "" || !errors.As(err, &inv) {
		return err
	}
	return &iii.InvocationError{Code: inv.Code, Message: strings.TrimSuffix(inv.Message, ".") + "; " + why}
}

// Explain says why functionID cannot be reached from this node, naming the
// nodes whose engines hold it: "" when there is nothing to add to
// function_not_found (one node, no bridge).
func (f *Follower) Explain(functionID string) string {
	p := f.Where(functionID)
	bridge := f.Bridge()
	if f.opts.Shared == nil && !bridge {
		return ""
	}
	this := "this node's engine"
	if f.opts.Node != "" {
		this = fmt.Sprintf("the engine of this node (%q)", f.opts.Node)
	}
	if len(p.Nodes) == 0 {
		if f.opts.Shared == nil {
			return fmt.Sprintf("neither %s nor the engine its iii-bridge connects to has it (its publisher is not connected)", this)
		}
		checked := this
		if bridge {
			checked += " and the engine its iii-bridge connects to"
		}
		return fmt.Sprintf("no node of this cluster reports it on its engine: its publisher is not connected (it registers it again when it reconnects); checked %s",
			checked)
	}
	holders := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		holders[i] = fmt.Sprintf("%q (as of %s)", n.Name, n.At)
	}
	where := "node " + strings.Join(holders, ", node ")
	if bridge {
		return fmt.Sprintf("%s has it on its engine, but %s runs an iii-bridge to another engine, which lacks it (an iii-bridge reaches one engine; see %s)",
			where, this, DeployDoc)
	}
	return fmt.Sprintf("%s has it on its engine, and %s has no iii-bridge worker to reach it: add one connected to that engine, or connect the publisher here (see %s)",
		where, this, DeployDoc)
}
