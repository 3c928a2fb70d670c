package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// How the publisher reads a refused skills::register / prompts::register
// (docs/publishers.md, "Refusals"). The Node and Python publishers read
// it the same way, with the same advice and log lines
// (conformance/vectors/refusals.json).

// Holder is the worker that holds an id this publisher was refused
// (FORBIDDEN), as the registry names it.
type Holder struct {
	// WorkerID is the engine's id of the worker's connection.
	WorkerID string `json:"worker_id"`
	// WorkerName is the name that worker gave the engine, as the
	// registry's web page shows it; "" when the registry did not name it.
	WorkerName string `json:"worker_name,omitempty"`
}

func (h Holder) String() string {
	if h.WorkerName == "" {
		return "worker " + h.WorkerID
	}
	return "worker " + jsonQuote(h.WorkerName) + " (" + h.WorkerID + ")"
}

// RejectedError is one skill or prompt the registry refused, with the
// refusal's code, the holder of the id when another worker holds it, and
// advice that fits the code. Its text is the line the publisher logs:
//
//	skills registry refused skill "x" (FORBIDDEN): <the registry's message>; <advice>
//
// A validation refusal (INVALID_ARGUMENTS), an id outside the namespaces
// of the publisher's scoped token (OUT_OF_SCOPE) and a signature the
// registry does not take (UNSIGNED, BAD_SIGNATURE) are permanent:
// reported once, never retried. An id another worker holds (FORBIDDEN,
// Holder set) is retried until the registration deadline: it passes to
// this publisher once that worker is gone.
type RejectedError struct {
	// Kind is "skill" or "prompt"; Name its id or name.
	Kind, Name string
	// Code is the registry's error code ("" when it sent none) and Message
	// its message.
	Code, Message string
	// Holder is the worker that holds the id (FORBIDDEN), nil otherwise or
	// when the registry did not say.
	Holder *Holder
	// Advice says what to do about it.
	Advice string
	// Err is the registry's answer.
	Err error
}

func (e *RejectedError) Error() string {
	code := ""
	if e.Code != "" {
		code = " (" + e.Code + ")"
	}
	return fmt.Sprintf("skills registry refused %s %s%s: %s; %s", e.Kind, jsonQuote(e.Name), code, e.Message, e.Advice)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// Retried reports whether the publisher keeps trying the item: another
// worker holds its id (FORBIDDEN), which clears up when that worker goes.
func (e *RejectedError) Retried() bool { return e.Code == rules.CodeForbidden }

// RegistrationError is what Start returns when the registry refused items:
// every refusal of the first registration round, in the order the items
// were added. Everything else was registered; items held by another worker
// are still being retried. errors.As finds each *RejectedError in it.
type RegistrationError struct {
	Rejected []*RejectedError
}

func (e *RegistrationError) Error() string {
	lines := make([]string, len(e.Rejected))
	for i, r := range e.Rejected {
		lines[i] = r.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each *RejectedError.
func (e *RegistrationError) Unwrap() []error {
	out := make([]error, len(e.Rejected))
	for i, r := range e.Rejected {
		out[i] = r
	}
	return out
}

// permanentMarkers are the registry's validation (and payload decoding)
// messages: a call refused with one of them is refused again. Our registry
// says so with code INVALID_ARGUMENTS; the markers are the fallback for an
// upstream registry, which answers every failure with invocation_failed.
var permanentMarkers = []string{
	"id must be non-empty", "id may not have", "id too long", "invalid id (segment",
	"skill must be non-empty", "skill body too large",
	"name must be non-empty", "name too long", "name may only contain",
	"description must be non-empty", "function_id must be non-empty",
	"argument name must be non-empty", "duplicate argument name",
	"missing field", "invalid type",
}

// isPermanent reports whether the registry will refuse the same call again:
// bad input, or an id outside the token's namespaces.
func isPermanent(err error) bool {
	var ie *iii.InvocationError
	if !errors.As(err, &ie) {
		return false
	}
	switch ie.Code {
	case rules.CodeInvalidArguments, rules.CodeOutOfScope, iii.CodeInvalidRequest, rules.CodeUnsigned, rules.CodeBadSignature:
		return true
	}
	for _, m := range permanentMarkers {
		if strings.Contains(ie.Message, m) {
			return true
		}
	}
	return false
}

// refusalOf reads a failed register call of item kind/name: a
// *RejectedError when the registry refused this item (permanently, or
// because another worker holds the id), nil when the failure is not about
// the item (the registry is absent or did not answer).
func refusalOf(kind, name string, err error) *RejectedError {
	var ie *iii.InvocationError
	if !errors.As(err, &ie) {
		return nil
	}
	re := &RejectedError{Kind: kind, Name: name, Code: ie.Code, Message: ie.Message, Err: err}
	switch {
	case ie.Code == rules.CodeForbidden:
		re.Holder = holderOf(ie.Message)
		re.Advice = heldAdvice(kind, re.Holder)
	case ie.Code == rules.CodeOutOfScope:
		re.Advice = "publish it under a namespace of this worker's token, or give the worker a token whose namespaces cover it (not retried)"
	case ie.Code == rules.CodeUnsigned:
		re.Advice = unsignedAdvice
	case ie.Code == rules.CodeBadSignature:
		re.Advice = badSignatureAdvice
	case isPermanent(err):
		re.Advice = "fix the " + kind + " and restart this worker (not retried)"
	default:
		return nil
	}
	return re
}

// The advice of the signing refusals (docs/trust.md): the registry's
// allowed_signers does not trust the signature, or it does not verify.
// Neither changes by retrying.
const (
	unsignedAdvice     = "sign it with a key the registry's allowed_signers trusts for this namespace (the publisher's signing key), or have the operator trust this key; then restart this worker (not retried)"
	badSignatureAdvice = "sign the exact bytes registered (a skill's body, a prompt's canonical JSON) for namespace " + rules.SignatureNamespace + ", or send no signature; then restart this worker (not retried)"
)

func heldAdvice(kind string, h *Holder) string {
	who := "the worker that holds it"
	if h != nil {
		who = h.String() + ", which holds it"
	}
	what := "id"
	if kind == "prompt" {
		what = "name"
	}
	return "stop " + who + ", or publish under another " + what + "; this worker retries until its registration deadline"
}

// holderPattern matches how the registry names the holder of an id:
// `belongs to another worker (<id>)` or `(<id>, named "<name>")`, the name
// a JSON string.
var holderPattern = regexp.MustCompile(`belongs to another worker \(([^,()\s]+)(?:, named ("(?:[^"\\]|\\.)*"))?\)`)

// holderOf reads the holder out of a FORBIDDEN message; nil when the text
// names none.
func holderOf(message string) *Holder {
	m := holderPattern.FindStringSubmatch(message)
	if m == nil {
		return nil
	}
	h := &Holder{WorkerID: m[1]}
	if m[2] != "" {
		_ = json.Unmarshal([]byte(m[2]), &h.WorkerName)
	}
	return h
}

// gaveUpHeldMessage is the warning logged instead of GaveUpMessage when the
// registration deadline passes while every missing item is held by another
// worker: the registry runs, so "install / start it" would mislead.
func gaveUpHeldMessage(held []*RejectedError) string {
	items := make([]string, len(held))
	for i, r := range held {
		items[i] = r.Kind + " " + jsonQuote(r.Name)
	}
	return "skills registration gave up while other workers hold " + strings.Join(items, ", ") +
		"; stop them or publish under other ids, then restart this worker"
}
