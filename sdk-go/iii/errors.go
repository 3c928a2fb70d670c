package iii

import (
	"context"
	"errors"
	"fmt"

	"github.com/iii-skills/skills/sdk-go/wire"
)

// Sentinel errors. Every error the client returns wraps one of these or is
// (or wraps) an *InvocationError / *RegistrationRejectedError, so callers can
// branch with errors.Is and errors.As.
var (
	// ErrTimeout is returned by Trigger when no result arrived within the
	// request's Timeout (default WithInvocationTimeout, 30 s). The error is
	// client-side only; the engine has no timeout for worker functions.
	ErrTimeout = errors.New("iii: invocation timed out")

	// ErrNotConnected is returned by Trigger when the client is disconnected
	// and the offline queue is full, or when reconnecting was given up. It is
	// also wrapped by the *InvocationError (code invocation_stopped) that a
	// pending call receives when its connection drops before the result
	// arrived.
	ErrNotConnected = errors.New("iii: not connected to the engine")

	// ErrClosed is returned by calls made after Close, and by pending calls
	// that Close interrupted.
	ErrClosed = errors.New("iii: client closed")

	// ErrNotRegistered is returned when unregistering something this client
	// does not (or no longer) hold.
	ErrNotRegistered = errors.New("iii: not registered")
)

// InvocationError is a failed invocation as reported over the wire
// (invocationresult.error), or a failure a Handler wants to report with a
// specific code. A Handler that returns (or wraps) an *InvocationError has its
// Code, Message and Stacktrace sent verbatim; any other handler error is sent
// with code "invocation_failed".
type InvocationError struct {
	FunctionID string
	Code       string
	Message    string
	Stacktrace string

	cause error
}

// Error formats the error as "<code>: <message> (function <id>)".
func (e *InvocationError) Error() string {
	s := e.Code + ": " + e.Message
	if e.FunctionID != "" {
		s += " (function " + e.FunctionID + ")"
	}
	return s
}

// Unwrap returns the underlying client-side cause, if any. The
// invocation_stopped error produced when a connection drops unwraps to
// ErrNotConnected.
func (e *InvocationError) Unwrap() error { return e.cause }

// NewInvocationError builds an *InvocationError for a Handler to return.
func NewInvocationError(code, message string) *InvocationError {
	return &InvocationError{Code: code, Message: message}
}

// RegistrationRejectedError is the content of a registrationrejected frame.
// WORKER_NAMESPACE_CONFLICT is fatal: the client stops reconnecting and every
// later call returns an error wrapping both ErrClosed and this error.
type RegistrationRejectedError struct {
	Code          string
	Namespace     string
	WorkerName    string
	FunctionID    string
	OwnerWorkerID string
	// Reason is the engine's explanation when it sends one (ours does for a
	// scoped token that does not cover the id).
	Reason string
}

func (e *RegistrationRejectedError) Error() string {
	switch {
	case e.WorkerName != "":
		return fmt.Sprintf("iii: registration rejected: %s: worker name %q in namespace %q is held by worker %q",
			e.Code, e.WorkerName, e.Namespace, e.OwnerWorkerID)
	case e.FunctionID != "" && e.Reason != "":
		return fmt.Sprintf("iii: registration rejected: %s: function %q: %s", e.Code, e.FunctionID, e.Reason)
	case e.FunctionID != "":
		return fmt.Sprintf("iii: registration rejected: %s: function %q in namespace %q is held by worker %q",
			e.Code, e.FunctionID, e.Namespace, e.OwnerWorkerID)
	default:
		return fmt.Sprintf("iii: registration rejected: %s (namespace %q)", e.Code, e.Namespace)
	}
}

func errorFromBody(functionID string, b *wire.ErrorBody) *InvocationError {
	return &InvocationError{FunctionID: functionID, Code: b.Code, Message: b.Message, Stacktrace: b.Stacktrace}
}

// Error codes a caller meets in InvocationError.Code and
// RegistrationRejectedError.Code, or returns with NewInvocationError. They
// are the wire's own codes (package wire holds the full set).
const (
	// CodeFunctionNotFound: no function with that id is registered.
	CodeFunctionNotFound = wire.CodeFunctionNotFound
	// CodeInvocationFailed: the function returned an error (the default
	// code of a Handler error).
	CodeInvocationFailed = wire.CodeInvocationFailed
	// CodeInvocationStopped: the connection carrying the call dropped
	// before the result arrived.
	CodeInvocationStopped = wire.CodeInvocationStopped
	// CodeInvalidRequest: the data did not decode into the function's
	// request type (RegisterFunctionTyped).
	CodeInvalidRequest = wire.CodeInvalidRequest
	// CodeWorkerNamespaceClash: the worker name is held by another worker;
	// fatal for the client.
	CodeWorkerNamespaceClash = wire.CodeWorkerNamespaceClash
	// CodeFunctionNamespaceClash: a function id is held by another worker.
	CodeFunctionNamespaceClash = wire.CodeFunctionNamespaceClash
)

// RustDisplay renders an error of this client the way the official Rust
// SDK displays its own ("remote error (function_not_found): Function x not
// found", "invocation timed out"), for messages that must match a Rust
// worker's byte for byte (upstream's "trigger x: …", "state::get: …").
// Any other error is returned unchanged.
func RustDisplay(err error) error {
	var inv *InvocationError
	switch {
	case errors.As(err, &inv):
		return fmt.Errorf("remote error (%s): %s", inv.Code, inv.Message)
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return errors.New("invocation timed out")
	default:
		return err
	}
}
