package downloads

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillarchive"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// The index's entry types.
const (
	TypeSkillMD = "skill-md"
	TypeArchive = "archive"
)

// MaxDescription is the RFC's bound on a description (characters).
const MaxDescription = 1024

// Index is the discovery index (RFC v0.2.0).
type Index struct {
	Schema string  `json:"$schema"`
	Skills []Entry `json:"skills"`
}

// Entry is one skill of the index.
type Entry struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
	URL         string `json:"url"`
	Digest      string `json:"digest"`
}

// LeftOut is a served skill the index does not list, and why.
type LeftOut struct {
	Path, Reason string
}

// Index renders the discovery index of what the registry serves now.
func (h *Handler) Index(ctx context.Context) ([]byte, error) {
	idx, _, err := h.BuildIndex(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// BuildIndex lists what the registry serves now as the index does, and
// the served skills it leaves out with the reason (package doc).
func (h *Handler) BuildIndex(ctx context.Context) (Index, []LeftOut, error) {
	idx := Index{Schema: Schema, Skills: []Entry{}}
	var listed []skillsext.Skill
	var left []LeftOut
	after := ""
	for {
		page, more, err := h.reg.CatalogSkills(ctx, after, 0)
		if err != nil {
			return idx, nil, err
		}
		for _, s := range page {
			after = s.Path
			if why := leftOut(s); why != "" {
				left = append(left, LeftOut{Path: s.Path, Reason: why})
				continue
			}
			listed = append(listed, s)
		}
		if !more || len(page) == 0 {
			break
		}
	}
	holders := map[string][]string{}
	for _, s := range listed {
		holders[s.Name] = append(holders[s.Name], s.Path)
	}
	for _, s := range listed {
		if ids := holders[s.Name]; len(ids) > 1 {
			left = append(left, LeftOut{Path: s.Path, Reason: fmt.Sprintf("its name %s is also the name of %s: a client installs skills by name", s.Name, strings.Join(others(ids, s.Path), ", "))})
			continue
		}
		e, err := h.entry(ctx, s)
		if err != nil {
			// Its files changed while they were read, or cannot be: left
			// out of this answer, not the whole index; logged once per
			// reason, however often the index is asked for.
			if old, _ := h.warned.Swap(s.Path, err.Error()); old != err.Error() {
				h.log.Warn("skill left out of the discovery index", "skill", s.Path, "err", err)
			}
			left = append(left, LeftOut{Path: s.Path, Reason: err.Error()})
			continue
		}
		idx.Skills = append(idx.Skills, e)
	}
	return idx, left, nil
}

func others(ids []string, self string) []string {
	out := make([]string, 0, len(ids)-1)
	for _, id := range ids {
		if id != self {
			out = append(out, id)
		}
	}
	return out
}

// leftOut says why a served skill cannot be an entry, or "".
func leftOut(s skillsext.Skill) string {
	switch {
	case s.Problem != "":
		return s.Problem
	case s.Dynamic:
		return "it links to live iii://fn/ sections that only the registry renders"
	case strings.TrimSpace(s.Description) == "":
		return "it has no description"
	case utf8.RuneCountInString(s.Description) > MaxDescription:
		return fmt.Sprintf("its description has %d characters, over the %d the discovery RFC allows", utf8.RuneCountInString(s.Description), MaxDescription)
	}
	if _, ok := skillFileOf(s); !ok {
		return "it has no " + skillFile
	}
	return ""
}

// entry is s's index entry: its SKILL.md when that is all it has, else
// its archive (.zip, the skill's folder at the root), at a URL relative to
// the index pinned by the content's digest.
func (h *Handler) entry(ctx context.Context, s skillsext.Skill) (Entry, error) {
	e := Entry{Name: s.Name, Description: s.Description}
	at := "./" + s.Path
	if s.SHA256 != "" {
		at += registry.SelectorSep + registry.DigestSelectorPrefix + s.SHA256
	}
	if len(s.Files) == 1 {
		f, _ := skillFileOf(s)
		e.Type, e.URL, e.Digest = TypeSkillMD, at+"/"+skillFile, registry.DigestSelectorPrefix+f.SHA256
		return e, nil
	}
	a, err := h.artifactOf(ctx, s, nil, skillarchive.Flat, formatZip)
	if err != nil {
		return e, err
	}
	e.Type, e.URL, e.Digest = TypeArchive, at+extZip, registry.DigestSelectorPrefix+hex.EncodeToString(a.sum[:])
	return e, nil
}
