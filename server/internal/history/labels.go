package history

import (
	"crypto/subtle"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Labels are named pointers to versions of an id; "latest" is implicit
// (the newest version). A selector is a version number or a label.

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
func (h *History) Label(id, label string, n int, token string) (LabelMove, error) {
	if err := CheckLabel(label); err != nil {
		return LabelMove{}, err
	}
	if slices.Contains(h.cfg.Protected, label) {
		if h.cfg.AdminToken == "" {
			return LabelMove{}, &Error{Msg: fmt.Sprintf("label %q is protected and no admin token is configured (--admin-token): it cannot be moved", label)}
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(h.cfg.AdminToken)) != 1 {
			return LabelMove{}, &Error{Msg: fmt.Sprintf("label %q is protected: pass the registry's admin token as admin_token", label)}
		}
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
	move := LabelMove{ID: id, Label: label, Version: n, Previous: hd.Labels[label]}
	if move.Previous == n {
		return move, nil
	}
	if hd.Labels == nil {
		hd.Labels = map[string]int{}
	}
	if _, moving := hd.Labels[label]; !moving && len(hd.Labels) >= MaxLabels {
		return LabelMove{}, &Error{Msg: fmt.Sprintf("%s %s already has %d labels, the most an id can have: move one of them instead", h.cfg.Noun, id, MaxLabels)}
	}
	hd.Labels[label] = n
	if err := h.putHead(hd); err != nil {
		return LabelMove{}, fmt.Errorf("move label %s of %s %s: %w", label, h.cfg.Noun, id, err)
	}
	h.setSummary(id, summaryOf(hd))
	return move, nil
}

// Resolve turns a selector (a version number or a label) into a kept
// version number of id.
func (h *History) Resolve(id, selector string) (int, error) {
	if err := h.load(); err != nil {
		return 0, err
	}
	h.mu.RLock()
	s := h.sums[id]
	var n int
	var found bool
	if s != nil {
		n, found = resolveIn(s, selector)
	}
	h.mu.RUnlock()
	if s == nil {
		return 0, h.errNoHistory(id)
	}
	if !found {
		if _, err := strconv.Atoi(selector); err == nil {
			return 0, h.errNoVersion(id, selector, s)
		}
		return 0, &Error{NotFound: true, Msg: fmt.Sprintf("%s %s has no label %q (labels: %s)", h.cfg.Noun, id, selector, labelNames(s))}
	}
	return n, nil
}

func resolveIn(s *summary, selector string) (int, bool) {
	if n, err := strconv.Atoi(selector); err == nil {
		for _, k := range s.kept {
			if int(k.n) == n {
				return n, true
			}
		}
		return 0, false
	}
	if selector == LatestLabel {
		return s.latest, true
	}
	n, ok := s.labels[selector]
	return n, ok
}

// Served returns the version a read without selector serves when label
// is the serve label: the label's version, or 0 when id has no such label
// (serve the newest) or it is the newest anyway.
func (h *History) Served(id, label string) int {
	if label == "" || label == LatestLabel {
		return 0
	}
	if h.load() != nil {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0
	}
	if n, ok := s.labels[label]; ok && n != s.latest {
		return n
	}
	return 0
}

// LabelVersion is the version label points at for id (even the newest)
// and when that version was registered; 0 when id has no such label.
func (h *History) LabelVersion(id, label string) (int, time.Time) {
	if label == "" || h.load() != nil {
		return 0, time.Time{}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.sums[id]
	if s == nil {
		return 0, time.Time{}
	}
	n, ok := s.labels[label]
	if label == LatestLabel {
		n, ok = s.latest, true
	}
	if !ok {
		return 0, time.Time{}
	}
	for _, k := range s.kept {
		if int(k.n) == n {
			return n, time.Unix(0, k.at).UTC()
		}
	}
	return n, time.Time{}
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
