package history

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/kv"
)

// Yanks take a version out of service without rewriting history: reads
// by label (latest included) and the serve label skip it, a pin (a number
// or a digest) still reads it with the reason (see Resolve, Serving).
// Deprecation marks a whole id with a message and keeps serving it. Both
// live in the head (fields y<n> and deprecated), so they outlive an
// unregister like the versions do.

// Bounds of a yank reason and a deprecation message.
const (
	MaxReasonBytes  = 1024
	MaxMessageBytes = 4096
)

// headOf reads id's head for a change; an id without versions is NotFound.
// Callers hold id's lock.
func (h *History) headOf(id string) (*head, error) {
	if err := h.load(); err != nil {
		return nil, err
	}
	hd, err := h.getHead(id)
	if err != nil {
		return nil, err
	}
	if hd == nil || len(hd.Versions) == 0 {
		return nil, h.errNoHistory(id)
	}
	return hd, nil
}

// Yank marks version n of id yanked with reason (given again, the reason
// is replaced); changed is false when it was yanked with that reason
// already.
func (h *History) Yank(id string, n int, reason string) (changed bool, err error) {
	if reason == "" || len(reason) > MaxReasonBytes {
		return false, &Error{Msg: fmt.Sprintf("a yank needs a reason of 1 to %d bytes (it reaches every reader of the version), got %d bytes", MaxReasonBytes, len(reason))}
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.headOf(id)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(hd.Versions, func(v headVersion) bool { return v.N == n }) {
		return false, h.errNoVersion(id, strconv.Itoa(n), summaryOf(hd))
	}
	if old, ok := hd.Yanked[n]; ok && old == reason {
		return false, nil
	}
	if hd.Yanked == nil {
		hd.Yanked = map[int]string{}
	}
	hd.Yanked[n] = reason
	if err := h.change(hd, kv.Op{Type: kv.OpSet, Field: yankField(n), Value: wire.AppendJSONString(nil, reason)}); err != nil {
		return false, fmt.Errorf("yank version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	return true, nil
}

// Unyank puts version n of id back in service; changed is false when it
// was not yanked.
func (h *History) Unyank(id string, n int) (changed bool, err error) {
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.headOf(id)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(hd.Versions, func(v headVersion) bool { return v.N == n }) {
		return false, h.errNoVersion(id, strconv.Itoa(n), summaryOf(hd))
	}
	if _, ok := hd.Yanked[n]; !ok {
		return false, nil
	}
	delete(hd.Yanked, n)
	if err := h.change(hd, kv.Op{Type: kv.OpRemove, Field: yankField(n)}); err != nil {
		return false, fmt.Errorf("unyank version %d of %s %s: %w", n, h.cfg.Noun, id, err)
	}
	return true, nil
}

// Deprecate sets id's deprecation message ("" removes it) and returns the
// one before.
func (h *History) Deprecate(id, message string) (previous string, err error) {
	if len(message) > MaxMessageBytes {
		return "", &Error{Msg: fmt.Sprintf("a deprecation message is at most %d bytes, got %d", MaxMessageBytes, len(message))}
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.headOf(id)
	if err != nil {
		return "", err
	}
	previous = hd.Deprecated
	if previous == message {
		return previous, nil
	}
	hd.Deprecated = message
	op := kv.Op{Type: kv.OpRemove, Field: "deprecated"}
	if message != "" {
		op = kv.Op{Type: kv.OpSet, Field: "deprecated", Value: wire.AppendJSONString(nil, message)}
	}
	if err := h.change(hd, op); err != nil {
		return "", fmt.Errorf("deprecate %s %s: %w", h.cfg.Noun, id, err)
	}
	return previous, nil
}

// Facts are what a listing says about a version of an id: its number and
// sha256, who signed it (SignedBy "" unsigned or untrusted, Key "" when
// unsigned), its yank reason and the id's deprecation message.
type Facts struct {
	Version    int
	SHA256     string
	SignedBy   string
	Key        string
	Yanked     string
	Deprecated string
}

// Facts returns the facts of version n of id from memory (no store
// read); ok is false when id has no such kept version.
func (h *History) Facts(id string, n int) (Facts, bool) {
	if h.load() != nil {
		return Facts{}, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return Facts{}, false
	}
	for _, k := range s.kept {
		if int(k.n) != n {
			continue
		}
		f := Facts{Version: n, SHA256: k.digestHex(), Yanked: s.yanked[n], Deprecated: s.deprecated}
		if k.signer != nil {
			f.SignedBy, f.Key = k.signer.by, k.signer.key
		}
		return f, true
	}
	return Facts{}, false
}

// Deprecated is id's deprecation message ("" when none).
func (h *History) Deprecated(id string) string {
	if h.load() != nil {
		return ""
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.sums[id]; s != nil {
		return s.deprecated
	}
	return ""
}

// ProtectedAt lists the protected labels that point at version n of id.
func (h *History) ProtectedAt(id string, n int) []string {
	if h.load() != nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	if s := h.sums[id]; s != nil {
		for l, v := range s.labels {
			if v == n && slices.Contains(h.cfg.Protected, l) {
				out = append(out, l)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Marks sums up id's yanks (how many, and a key that changes with any of
// them) and its deprecation, so that a registry instance that re-read a
// head another instance changed can tell what changed.
func (h *History) Marks(id string) (yanks int, key, deprecated string) {
	if h.load() != nil {
		return 0, "", ""
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0, "", ""
	}
	ns := make([]int, 0, len(s.yanked))
	for n := range s.yanked {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var b []byte
	for _, n := range ns {
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ':')
		b = append(b, s.yanked[n]...)
		b = append(b, 0)
	}
	return len(ns), string(b), s.deprecated
}

// HasContent reports whether a kept version of id has exactly content
// (compared by sha256, from memory).
func (h *History) HasContent(id, content string) bool {
	if h.load() != nil {
		return false
	}
	d := Digest(content)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s := h.sums[id]; s != nil {
		for _, k := range s.kept {
			if k.digest == d {
				return true
			}
		}
	}
	return false
}

// HasStoredContent is HasContent asked of id's head in state rather than
// of this instance's summaries, which may not have heard yet of a version
// another instance sharing state recorded a moment ago. Call it under
// id's lock (a Repair callback).
func (h *History) HasStoredContent(id, content string) (bool, error) {
	hd, err := h.getHead(id)
	if err != nil || hd == nil {
		return false, err
	}
	sum := Digest(content)
	want := hex.EncodeToString(sum[:])
	for _, v := range hd.Versions {
		if v.SHA256 == want {
			return true, nil
		}
	}
	return false, nil
}
