package web

import (
	"errors"
	"testing"

	iii "github.com/iii-skills/skills/sdk-go/iii"
)

// "No versions" is decided by the registry's code: NOT_FOUND (our
// registry) or function_not_found (a registry without versions); the
// message counts only under the generic invocation_failed.
func TestIsNoHistoryDecidesByCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&iii.InvocationError{Code: "NOT_FOUND", Message: "skill a/b has no versions"}, true},
		{&iii.InvocationError{Code: "NOT_FOUND", Message: "worded in a way no text match knows"}, true},
		{&iii.InvocationError{Code: "function_not_found", Message: "Function skills::versions not found"}, true},
		{&iii.InvocationError{Code: "invocation_failed", Message: "skill a/b has no versions"}, true},
		{&iii.InvocationError{Code: "invocation_failed", Message: "state::get: timeout"}, false},
		{&iii.InvocationError{Code: "INVALID_ARGUMENTS", Message: "id must be non-empty; has no versions"}, false},
		{&iii.InvocationError{Code: "FORBIDDEN", Message: "skill a/b has no versions"}, false},
		{errors.New("skill a/b has no versions"), false},
	} {
		if got := isNoHistory(c.err); got != c.want {
			t.Errorf("isNoHistory(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
