package directory

import (
	"errors"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// Verdicts carry a code, as the registry's do (server/internal/core/errors.go):
// upstream iii-directory v0.5 answers every failure with invocation_failed;
// we keep its message byte for byte and name the verdict by code, so a
// caller tells a refusal or a miss from a failure behind the surface
// without matching text. Every other handler error goes out as
// invocation_failed.

// invalidArguments answers input the caller got wrong (a payload that does
// not decode, an empty or malformed value) with code INVALID_ARGUMENTS:
// the same call is refused again.
func invalidArguments(err error) error {
	return &iii.InvocationError{Code: rules.CodeInvalidArguments, Message: err.Error()}
}

// notFound answers a read of something the surface does not hold (an
// unknown skill, prompt, function, trigger type, registered trigger or
// worker, a section URI without a function behind it, a skill folder a
// repository lacks) with code NOT_FOUND.
func notFound(err error) error {
	return &iii.InvocationError{Code: rules.CodeNotFound, Message: err.Error()}
}

// refusal answers a download the operator's download_hosts does not allow
// (downloads off, or a host, registry redirect included, not listed) with
// code FORBIDDEN, keeping the message; any other error is returned as is.
func refusal(err error) error {
	var h hostRefused
	if errors.As(err, &h) {
		return &iii.InvocationError{Code: rules.CodeForbidden, Message: err.Error()}
	}
	return err
}
