package engine

// Reservations of the in-process worker. The worker that runs inside the
// engine's own process (skills --standalone: the registry, dialled through
// DialContext) registers its function ids, trigger types and worker name
// before any socket is accepted (Config.HoldSockets). From then on, for
// the life of the engine, those belong to in-process connections only: a
// socket connection is refused them even while the registry's connection
// is briefly away (a reconnect), so no client can wait for that moment and
// take the registry's ids, serve its surfaces or pass for it in listings.

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// reservations are what in-process connections registered; guarded by e.mu.
type reservations struct {
	functions map[string]bool
	types     map[string]bool
	// names maps the skeleton of a reserved worker name (nameSkeleton) to
	// the name.
	names map[string]string
}

func newReservations() reservations {
	r := reservations{functions: map[string]bool{}, types: map[string]bool{}, names: map[string]string{}}
	// The engine's own providers' names appear in listings too.
	for _, n := range []string{stateWorkerName, engineWorkerName, pubsubWorkerName} {
		r.names[nameSkeleton(n)] = n
	}
	return r
}

// functionReservedLocked says why socket connection c may not register
// the function id, or returns "" when it may; an in-process c reserves
// the id. Callers hold e.mu.
func (e *Engine) functionReservedLocked(c *conn, id string) string {
	return reserveLocked(e.reserved.functions, c, id, "function", "register")
}

// typeReservedLocked is functionReservedLocked for a trigger type.
func (e *Engine) typeReservedLocked(c *conn, id string) string {
	return reserveLocked(e.reserved.types, c, id, "trigger type", "provide")
}

func reserveLocked(set map[string]bool, c *conn, id, what, verb string) string {
	if c.local {
		set[id] = true
		return ""
	}
	if !set[id] {
		return ""
	}
	return fmt.Sprintf("reserved: %s %s belongs to the worker running inside this engine's process (skills --standalone) for the engine's life; a socket connection cannot %s it",
		what, id, verb)
}

// nameReservedLocked says why socket connection c may not call itself
// name, or returns ""; an in-process c reserves it. Names are compared by
// their confusable skeleton, so "SKILLS", "ѕkills" (Cyrillic s) or
// "s k i l l s" are the registry's name too. Callers hold e.mu.
func (e *Engine) nameReservedLocked(c *conn, name string) string {
	sk := nameSkeleton(name)
	if sk == "" {
		return ""
	}
	if c.local {
		e.reserved.names[sk] = name
		return ""
	}
	owner, ok := e.reserved.names[sk]
	if !ok {
		return ""
	}
	return fmt.Sprintf("forbidden: worker name %q is taken: it reads as %q, the name of a worker that runs inside this engine (or of the engine itself); a socket connection must choose another name (it is listed without one)", name, owner)
}

// nameSkeleton is what a worker name looks like to a reader: NFKC, lower
// case, the Unicode confusable skeleton (UTS #39: "ѕ" → "s", "ℓ" → "l"),
// letters and digits only.
func nameSkeleton(name string) string {
	s := confusables.Skeleton(strings.ToLower(norm.NFKC.String(name)))
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
