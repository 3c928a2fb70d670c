package engine

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/httpguard"
	"github.com/iii-skills/skills/server/internal/scope"
)

// ScopedToken is a per-publisher worker token: a connection that presents
// it may only publish under its namespaces. It registers functions and
// trigger types whose ids are "<ns>::…", binds triggers only to those
// functions (never to the engine's `state` type, which would hand it every
// write of a scope), cannot call state::*, and the skills registry
// accepts from it only skills "<ns>" / "<ns>/…" and prompts "<ns>",
// "<ns>-…" or "<ns>_…" unless another token's longer namespace covers
// them (scope.NamespacedSkill, scope.NamespacedPrompt). The shared
// Config.Token keeps full access.
type ScopedToken struct {
	// Name identifies the token in logs, refusals and the caller identity
	// ("acme"); it is not secret.
	Name string `yaml:"name" json:"name"`
	// Token is the secret the connection presents (Authorization: Bearer
	// or ?token=), like Config.Token.
	Token string `yaml:"token" json:"-"`
	// Namespaces are the first segments this token may publish under.
	Namespaces []string `yaml:"namespaces" json:"namespaces"`
	// nested are other tokens' namespaces nested in Namespaces (set by
	// New, stamped with the caller: see scope.Nested).
	nested []string
}

// namespaceRE is what a namespace may be: the leading segment of a function
// id, skill id or prompt name, so it must be valid in all three.
var namespaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidateScopedTokens checks scoped tokens before an engine uses them:
// names and tokens present and distinct, namespaces well formed.
func ValidateScopedTokens(tokens []ScopedToken, shared string) error {
	names := map[string]bool{}
	secrets := map[string]string{}
	for i, t := range tokens {
		switch {
		case t.Name == "":
			return fmt.Errorf("engine_tokens[%d]: name is required (it names the token in refusals and logs)", i)
		case names[t.Name]:
			return fmt.Errorf("engine_tokens[%d]: name %q is used twice", i, t.Name)
		case len(t.Token) < 16:
			return fmt.Errorf("engine_tokens[%d] (%s): token must be at least 16 characters, got %d", i, t.Name, len(t.Token))
		case t.Token == shared:
			return fmt.Errorf("engine_tokens[%d] (%s): token is the shared engine token (--engine-token); give each team its own", i, t.Name)
		case secrets[t.Token] != "":
			return fmt.Errorf("engine_tokens[%d] (%s): token is also the token of %q", i, t.Name, secrets[t.Token])
		case len(t.Namespaces) == 0:
			return fmt.Errorf("engine_tokens[%d] (%s): namespaces must list at least one namespace (e.g. [acme])", i, t.Name)
		}
		for _, ns := range t.Namespaces {
			if !namespaceRE.MatchString(ns) {
				return fmt.Errorf("engine_tokens[%d] (%s): namespace %q must be 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit", i, t.Name, ns)
			}
		}
		names[t.Name] = true
		secrets[t.Token] = t.Name
	}
	return nil
}

// NamespacedFunction is the namespace rule of scoped tokens for function
// ids, shared with the registry worker and the Skills Protocol runtime.
var NamespacedFunction = scope.NamespacedFunction

// withNested returns a copy of tokens with each token's nested namespaces
// (the other tokens' namespaces that extend its own) filled in.
func withNested(tokens []ScopedToken) []ScopedToken {
	out := slices.Clone(tokens)
	for i := range out {
		var others [][]string
		for j, t := range tokens {
			if j != i {
				others = append(others, t.Namespaces)
			}
		}
		out[i].nested = scope.Nested(out[i].Namespaces, others)
	}
	return out
}

// PublisherPrivatePrefix: see scope.PublisherPrivatePrefix.
const PublisherPrivatePrefix = scope.PublisherPrivatePrefix

// authenticate applies the token rule of the worker socket and returns the
// scoped token the connection presented (nil: full access). Without any
// token configured every connection has full access, as before; with the
// shared token or scoped tokens configured, a connection must present one
// of them. The in-process connection (the standalone registry) is trusted.
func (e *Engine) authenticate(r *http.Request) (*ScopedToken, *httpguard.Refusal) {
	if e.cfg.Token == "" && len(e.cfg.ScopedTokens) == 0 {
		return nil, nil
	}
	if isInProcess(r) {
		return nil, nil
	}
	got := presentedToken(r)
	if got != "" && e.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(e.cfg.Token)) == 1 {
		return nil, nil
	}
	for i := range e.cfg.ScopedTokens {
		t := &e.cfg.ScopedTokens[i]
		if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(t.Token)) == 1 {
			return t, nil
		}
	}
	return nil, &httpguard.Refusal{Status: http.StatusUnauthorized,
		Message: "Unauthorized: a valid bearer token is required (Authorization: Bearer <token>)"}
}

// presentedToken is the token of an upgrade request: the Authorization
// bearer value, else the ?token= query parameter.
func presentedToken(r *http.Request) string {
	if scheme, v, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(v)
	}
	return r.URL.Query().Get(TokenParam)
}

type scopeKey struct{}

// withScope carries the authenticated scope from the guard to handleWorker.
func withScope(r *http.Request, s *ScopedToken) *http.Request {
	if s == nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), scopeKey{}, s))
}

func scopeOf(r *http.Request) *ScopedToken {
	s, _ := r.Context().Value(scopeKey{}).(*ScopedToken)
	return s
}

// scopeName is the name of c's scoped token, "" for full access.
func (c *conn) scopeName() string {
	if c == nil || c.scope == nil {
		return ""
	}
	return c.scope.Name
}

// outOfScope explains why a scoped connection may not use id (what is
// "function", "trigger type"…), or returns "" when it may.
func (c *conn) outOfScope(what, id string) string {
	if c.scope == nil || callerOf(c).CoversFunction(id) {
		return ""
	}
	return fmt.Sprintf("%s %q is outside the namespaces of token %q (%s)", what, id, c.scope.Name,
		strings.Join(c.scope.Namespaces, ", "))
}

// forbiddenCall explains why c may not invoke functionID, or returns "".
// A scoped token publishes; it does not read or write the engine's state
// directly (that would bypass the registry's ownership and namespaces).
func (c *conn) forbiddenCall(functionID string) string {
	// publish is forbidden too: a message on the registry's change topic
	// would make every registry instance re-read keys and could vouch for
	// changes it never applied.
	if c == nil || c.scope == nil || (!strings.HasPrefix(functionID, "state::") && functionID != publishFunction) {
		return ""
	}
	return fmt.Sprintf("forbidden: token %q (scoped to %s) cannot call %s; scoped tokens publish through the registry and do not touch engine state or pubsub",
		c.scope.Name, strings.Join(c.scope.Namespaces, ", "), functionID)
}

// CallerKey is the invocation metadata key the engine stamps on every
// invocation it delivers: {"worker_id": the calling connection ("" when
// the engine itself calls: trigger fires), "token": the name of its scoped
// token ("" for full access), "namespaces": its namespaces}; a queued job
// carries the identity of the connection that enqueued it. A key of that
// name sent by a client is replaced, so a function can trust it on this
// engine (a worker can check by calling itself with a forged one).
const CallerKey = scope.CallerKey

// Caller is the value of CallerKey.
type Caller = scope.Caller

func callerOf(c *conn) Caller {
	if c == nil {
		return Caller{}
	}
	out := Caller{WorkerID: c.id}
	if c.scope != nil {
		out.Token, out.Namespaces, out.Nested = c.scope.Name, c.scope.Namespaces, c.scope.nested
	}
	return out
}

// stampCaller returns metadata with CallerKey set to c's identity. Object
// metadata keeps its other keys (decoded and re-encoded, so an escaped or
// duplicated key cannot smuggle a second value past the stamp); metadata
// that is not an object is replaced, since there is nowhere to put the key.
func stampCaller(metadata json.RawMessage, c *conn) json.RawMessage {
	return stampWith(metadata, stampOf(c))
}

// stampOf is {"iii_caller": <c's identity>} (the engine's own, no caller,
// for nil).
func stampOf(c *conn) json.RawMessage {
	if c == nil {
		return engineStamp
	}
	if c.stamp == nil { // a conn built outside handleWorker
		return callerMetadata(c)
	}
	return c.stamp
}

// stampWith returns metadata with CallerKey set from alone (a stampOf).
func stampWith(metadata, alone json.RawMessage) json.RawMessage {
	d := bytes.TrimSpace(metadata)
	if len(d) == 0 || d[0] != '{' {
		return alone
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(d, &obj); err != nil {
		return alone
	}
	obj[CallerKey] = alone[len(`{"`+CallerKey+`":`) : len(alone)-1]
	out, err := json.Marshal(obj)
	if err != nil {
		return alone
	}
	return out
}

// engineStamp is the metadata of the engine's own calls (no caller).
var engineStamp = callerMetadata(nil)

// callerMetadata is {"iii_caller": <c's identity>}: computed once per
// connection (its identity never changes), so an invocation without
// metadata of its own costs no encoding.
func callerMetadata(c *conn) json.RawMessage {
	stamp, _ := json.Marshal(callerOf(c))
	return append(append([]byte(`{"`+CallerKey+`":`), stamp...), '}')
}

// workersIdentity serves engine::workers::identity: without arguments the
// caller's own identity; with {"worker_id"} whether that connection is
// alive and which token it holds (a worker cannot register engine::* ids
// here, so the answer is the engine's).
func (e *Engine) workersIdentity(_ context.Context, c *conn, data json.RawMessage) (json.RawMessage, *wire.ErrorBody) {
	const fn = iii.FnWorkerIdentity
	a, errb := parseArgs(fn, data, false, `{"worker_id":"<uuid>"}`)
	if errb != nil {
		return nil, errb
	}
	opt, errb := a.optStrs("worker_id")
	if errb != nil {
		return nil, errb
	}
	type answer struct {
		Caller
		Connected bool `json:"connected"`
	}
	if opt[0] == "" {
		return mustJSON(answer{Caller: callerOf(c), Connected: c != nil}), nil
	}
	e.mu.RLock()
	other := e.conns[opt[0]]
	e.mu.RUnlock()
	if other == nil {
		return mustJSON(answer{Caller: Caller{WorkerID: opt[0]}}), nil
	}
	e.pmu.Lock()
	dead := other.dead
	e.pmu.Unlock()
	return mustJSON(answer{Caller: callerOf(other), Connected: !dead}), nil
}

// errHeld is returned by AcceptSockets on an engine started without
// Config.HoldSockets, or called twice.
var errHeld = errors.New("engine: sockets are not held (Config.HoldSockets unset) or already accepted")

// scopeForbidsBinding explains why c may not bind functionID to
// triggerType, or returns "".
func (c *conn) scopeForbidsBinding(triggerType, functionID string) string {
	if c.scope == nil {
		return ""
	}
	if triggerType == stateTriggerType {
		return fmt.Sprintf("forbidden: token %q cannot bind the engine's state trigger (it would deliver every write of a scope)", c.scope.Name)
	}
	if why := c.outOfScope("function", functionID); why != "" {
		return "forbidden: a trigger may only call this token's own functions: " + why
	}
	return ""
}
