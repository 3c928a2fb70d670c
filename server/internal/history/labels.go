package history

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Labels are named pointers to versions of an id; "latest" is implicit
// (the newest version). A selector is a version number, a label or a
// content pin, sha256:<hex>.

// LabelMove is the result of Label.
type LabelMove struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	Version  int    `json:"version"`
	Previous int    `json:"previous,omitempty"` // 0: the label is new
}

// CheckLabel says whether name can be a label.
func CheckLabel(name string) error {
	if name == "" || len(name) > MaxLabelBytes {
		return &Error{Msg: fmt.Sprintf("invalid label %q: expected 1 to %d characters", name, MaxLabelBytes)}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_' || c == '.')
		if !ok {
			return &Error{Msg: fmt.Sprintf("invalid label %q: expected lowercase letters, digits, '-', '_' and '.', starting with a letter or digit", name)}
		}
	}
	if _, err := strconv.Atoi(name); err == nil {
		return &Error{Msg: fmt.Sprintf("invalid label %q: a label cannot be a number (numbers select versions)", name)}
	}
	if name == LatestLabel {
		return &Error{Msg: fmt.Sprintf("label %q is moved by the registry only: register new content or use rollback", LatestLabel)}
	}
	return nil
}

// Label points label at version n of id. A protected label needs token.
// A yanked version takes no label.
func (h *History) Label(id, label string, n int, token string) (LabelMove, error) {
	if err := CheckLabel(label); err != nil {
		return LabelMove{}, err
	}
	if err := h.CheckAdmin(label, token); err != nil {
		return LabelMove{}, err
	}
	if err := h.load(); err != nil {
		return LabelMove{}, err
	}
	unlock := h.lock(id)
	defer unlock()
	hd, err := h.getHead(id)
	if err != nil {
		return LabelMove{}, err
	}
	if hd == nil || len(hd.Versions) == 0 {
		return LabelMove{}, h.errNoHistory(id)
	}
	if !slices.ContainsFunc(hd.Versions, func(v headVersion) bool { return v.N == n }) {
		return LabelMove{}, h.errNoVersion(id, strconv.Itoa(n), summaryOf(hd))
	}
	if reason, yanked := hd.Yanked[n]; yanked {
		return LabelMove{}, &Error{Msg: fmt.Sprintf("version %d of %s %s is yanked (%s): a label cannot point at it; unyank it first", n, h.cfg.Noun, id, reason)}
	}
	move := LabelMove{ID: id, Label: label, Version: n, Previous: hd.Labels[label]}
	if move.Previous == n {
		return move, nil
	}
	if _, moving := hd.Labels[label]; !moving && len(hd.Labels) >= MaxLabels {
		return LabelMove{}, &Error{Msg: fmt.Sprintf("%s %s already has %d labels, the most an id can have: move one of them instead", h.cfg.Noun, id, MaxLabels)}
	}
	if hd.Labels == nil {
		hd.Labels = map[string]int{}
	}
	hd.Labels[label] = n
	err = h.change(hd, kv.Op{Type: kv.OpMerge, Field: "labels", Value: appendLabels(nil, map[string]int{label: n})})
	if err != nil {
		return LabelMove{}, fmt.Errorf("move label %s of %s %s: %w", label, h.cfg.Noun, id, err)
	}
	return move, nil
}

// CheckAdmin refuses a change of protected label without the admin token.
func (h *History) CheckAdmin(label, token string) error {
	if !slices.Contains(h.cfg.Protected, label) {
		return nil
	}
	if h.cfg.AdminToken == "" {
		return &Error{Msg: fmt.Sprintf("label %q is protected and no admin token is configured (--admin-token): it cannot be moved", label)}
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(h.cfg.AdminToken)) != 1 {
		return &Error{Msg: fmt.Sprintf("label %q is protected: pass the registry's admin token as admin_token", label)}
	}
	return nil
}

// Pick is the version a selector resolved to, and its yank reason when a
// pin (a number or a digest) names a yanked version.
type Pick struct {
	Version int
	Yanked  string
}

// DigestPrefix starts a content pin: sha256:<64 lowercase hex>.
const DigestPrefix = "sha256:"

// Resolve turns a selector into a kept version of id: a version number or
// sha256:<hex> pins exactly that version (yanked or not: Pick.Yanked says);
// a label (latest included) names its version, or when that one is yanked
// the newest version that is not, or NOT_FOUND with the yank reason when
// every version is.
func (h *History) Resolve(id, selector string) (Pick, error) {
	if err := h.load(); err != nil {
		return Pick{}, err
	}
	if hexSum, ok := strings.CutPrefix(selector, DigestPrefix); ok {
		return h.resolveDigest(id, hexSum)
	}
	h.mu.RLock()
	s := h.sums[id]
	var p Pick
	var found bool
	var withdrawn string
	if s != nil {
		p, found, withdrawn = resolveIn(s, selector)
	}
	h.mu.RUnlock()
	if s == nil {
		return Pick{}, h.errNoHistory(id)
	}
	switch {
	case withdrawn != "":
		return Pick{}, h.errWithdrawn(id, withdrawn)
	case found:
		return p, nil
	}
	if _, err := strconv.Atoi(selector); err == nil {
		return Pick{}, h.errNoVersion(id, selector, s)
	}
	return Pick{}, &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no label %q (labels: %s)", h.cfg.Noun, id, selector, labelNames(s))}
}

// resolveIn resolves a number or a label in s; withdrawn is the yank
// reason when the label's version and every later fallback are yanked.
func resolveIn(s *summary, selector string) (p Pick, found bool, withdrawn string) {
	if n, err := strconv.Atoi(selector); err == nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				return Pick{Version: n, Yanked: s.yanked[n]}, true, ""
			}
		}
		return Pick{}, false, ""
	}
	n, ok := s.labels[selector]
	if selector == LatestLabel {
		n, ok = s.latest, true
	}
	if !ok {
		return Pick{}, false, ""
	}
	served, reason := s.unyanked(n)
	if served == 0 {
		return Pick{}, false, reason
	}
	return Pick{Version: served}, true, ""
}

// unyanked is n when it is not yanked, else the newest kept version that
// is not; 0 and n's yank reason when every version is yanked.
func (s *summary) unyanked(n int) (int, string) {
	reason, yanked := s.yanked[n]
	if !yanked {
		return n, ""
	}
	for i := len(s.kept) - 1; i >= 0; i-- {
		if _, y := s.yanked[int(s.kept[i].n)]; !y {
			return int(s.kept[i].n), ""
		}
	}
	return 0, reason
}

// resolveDigest finds the version of id whose content has sha256 hexSum
// (the newest, should two have the same content).
func (h *History) resolveDigest(id, hexSum string) (Pick, error) {
	if !isHexDigest(hexSum) {
		return Pick{}, &Error{Msg: BadDigest(hexSum)}
	}
	var want [sha256.Size]byte
	_, _ = hex.Decode(want[:], []byte(hexSum))
	h.mu.RLock()
	s := h.sums[id]
	var unknown []kept
	if s != nil {
		for i := len(s.kept) - 1; i >= 0; i-- {
			k := s.kept[i]
			if k.digest == want {
				p := Pick{Version: int(k.n), Yanked: s.yanked[int(k.n)]}
				h.mu.RUnlock()
				return p, nil
			}
			if k.digest == ([sha256.Size]byte{}) {
				unknown = append(unknown, k)
			}
		}
	}
	h.mu.RUnlock()
	if s == nil {
		return Pick{}, h.errNoHistory(id)
	}
	// Heads of the format before recorded only the newest digest: read
	// the others' rows once and remember what they say.
	for _, k := range unknown {
		row, err := h.row(id, int(k.n), k.key, "")
		if err != nil {
			continue
		}
		h.learnDigest(id, int(k.n), row.SHA256)
		if row.SHA256 == hexSum {
			return h.resolveDigest(id, hexSum)
		}
	}
	return Pick{}, &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version with sha256 %s (kept: %s)", h.cfg.Noun, id, hexSum, keptRange(s))}
}

// learnDigest records the digest of a version a legacy head did not.
func (h *History) learnDigest(id string, n int, hexSum string) {
	d, err := hex.DecodeString(hexSum)
	if err != nil || len(d) != sha256.Size {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sums[id]; s != nil {
		for i := range s.kept {
			if int(s.kept[i].n) == n {
				copy(s.kept[i].digest[:], d)
			}
		}
	}
}

// BadDigest says what is wrong with the hex of a sha256:<hex> selector.
func BadDigest(hexSum string) string { return registry.BadDigest(hexSum) }

// Serving says which version a read of id without a selector serves:
// the serve label's version where id has that label, else the newest;
// when that version is yanked, the newest one that is not. pinned is true
// when that is not the newest version (whose content the served row
// holds); withdrawn is the yank reason when every version is yanked (the
// id then serves nothing). An id without history serves its row.
func (h *History) Serving(id, serveLabel string) (n int, pinned bool, withdrawn string) {
	if h.load() != nil {
		return 0, false, ""
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0, false, ""
	}
	target := s.latest
	if serveLabel != "" && serveLabel != LatestLabel {
		if l, ok := s.labels[serveLabel]; ok {
			target = l
		}
	}
	n, reason := s.unyanked(target)
	if n == 0 {
		return 0, false, reason
	}
	return n, n != s.latest, ""
}

// Served returns the version a read without selector serves when it is
// not the newest (the serve label's, or the newest one not yanked), or 0.
func (h *History) Served(id, label string) int {
	n, pinned, _ := h.Serving(id, label)
	if !pinned {
		return 0
	}
	return n
}

// VersionTime is when version n of id was registered (zero: unknown).
func (h *History) VersionTime(id string, n int) time.Time {
	if k, ok := h.keptVersion(id, n); ok {
		return time.Unix(0, k.at).UTC()
	}
	return time.Time{}
}

// LabelVersion is the version label points at for id (even the newest)
// and when that version was registered; 0 when id has no such label.
func (h *History) LabelVersion(id, label string) (int, time.Time) {
	if label == "" || h.load() != nil {
		return 0, time.Time{}
	}
	h.mu.RLock()
	s := h.sums[id]
	var n int
	var ok bool
	if s != nil {
		n, ok = s.labels[label]
		if label == LatestLabel {
			n, ok = s.latest, true
		}
	}
	h.mu.RUnlock()
	if !ok {
		return 0, time.Time{}
	}
	return n, h.VersionTime(id, n)
}

func labelNames(s *summary) string {
	names := []string{LatestLabel}
	for k := range s.labels {
		names = append(names, k)
	}
	sort.Strings(names[1:])
	return strings.Join(names, ", ")
}

func (h *History) errNoHistory(id string) error {
	return &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no versions", h.cfg.Noun, id)}
}

func (h *History) errWithdrawn(id, reason string) error {
	return &Error{NotFound: true, Msg: fmt.Sprintf("%s %s serves no version: every kept version is yanked (%s)", h.cfg.Noun, id, reason)}
}

func (h *History) errNoVersion(id, selector string, s *summary) error {
	return &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no version %s (kept: %s)", h.cfg.Noun, id, selector, keptRange(s))}
}

// keptRange renders the kept version numbers compactly: "1-4, 7".
func keptRange(s *summary) string {
	var parts []string
	for i := 0; i < len(s.kept); {
		j := i
		for j+1 < len(s.kept) && s.kept[j+1].n == s.kept[j].n+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(s.kept[i].n)))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s.kept[i].n, s.kept[j].n))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
