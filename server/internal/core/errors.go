package core

import (
	"errors"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
)

// invalidArguments answers input the caller got wrong (a payload that does
// not decode, a value the rules refuse, a URI that does not parse) with
// code INVALID_ARGUMENTS and the unchanged upstream message, so callers
// tell a refusal from a failure by code instead of by text.
func invalidArguments(err error) error {
	return &iii.InvocationError{Code: registry.CodeInvalidArguments, Message: err.Error()}
}

// notFound answers a read of something the registry does not hold (an
// unknown skill, prompt, version, label or section function) with code
// NOT_FOUND and the unchanged upstream message ("Skill not found: a/b"),
// so callers tell it from a failure behind the registry by code.
func notFound(err error) error {
	return &iii.InvocationError{Code: registry.CodeNotFound, Message: err.Error()}
}

// historyError answers a refusal of history: an unknown id, version or
// label is NOT_FOUND, like "Skill not found"; bad input is
// INVALID_ARGUMENTS.
func historyError(err error) error {
	var he *history.Error
	switch {
	case !errors.As(err, &he):
		return err
	case he.NotFound:
		return notFound(err)
	default:
		return invalidArguments(err)
	}
}

// answer is what every method of Local returns as its error: a verdict
// keeps its code; any other failure becomes code invocation_failed with
// its message, exactly what a caller over iii gets (the iii client sends
// a handler's plain error that way). In-process and remote surfaces then
// see the same errors.
func answer(err error) error {
	if err == nil {
		return nil
	}
	var inv *iii.InvocationError
	if errors.As(err, &inv) {
		return inv
	}
	return &iii.InvocationError{Code: iii.CodeInvocationFailed, Message: err.Error()}
}

// sdkError renders an iii client error the way upstream's Rust SDK
// displays it, because upstream messages embed that text ("trigger x:
// remote error (function_not_found): Function x not found").
var sdkError = iii.RustDisplay
