package worker

import (
	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/registry"
)

// invalidArguments answers input the caller got wrong (a payload that does
// not decode, a value the rules refuse, a URI that does not parse) with
// code INVALID_ARGUMENTS and the unchanged upstream message, so callers
// tell a refusal from a failure by code instead of by text. Every other
// handler error goes out as invocation_failed.
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
