package downloads

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillarchive"
)

// The paths this package serves.
const (
	// WellKnownPrefix is the RFC's folder: the index, SKILL.md files and
	// archives with the skill's folder at their root.
	WellKnownPrefix = "/.well-known/agent-skills/"
	// IndexPath is the discovery index.
	IndexPath = WellKnownPrefix + "index.json"
	// ArchivePrefix serves archives with one top folder named after the
	// skill.
	ArchivePrefix = "/archive/"
	// Schema is the $schema of the index (discovery RFC v0.2.0).
	Schema = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
)

// format is what a download is.
type format int

const (
	formatSkillMD format = iota
	formatZip
	formatTarGz
)

const (
	extZip    = ".zip"
	extTarGz  = ".tar.gz"
	skillFile = skillarchive.SkillFile
)

func (f format) ext() string {
	switch f {
	case formatZip:
		return extZip
	case formatTarGz:
		return extTarGz
	}
	return "/" + skillFile
}

func (f format) contentType() string {
	switch f {
	case formatZip:
		return "application/zip"
	case formatTarGz:
		return "application/gzip"
	}
	return "text/markdown; charset=utf-8"
}

// request is what a download path names.
type request struct {
	id, sel string // sel: "" for what a read without a selector serves
	format  format
	layout  skillarchive.Layout
}

// skillPath is <id> or <id>@<selector>, as the catalog names it.
func (r request) skillPath() string {
	if r.sel == "" {
		return r.id
	}
	return r.id + registry.SelectorSep + r.sel
}

// refusal is an answer other than the download: a status and what to say.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

func refuse(status int, format string, args ...any) *refusal {
	return &refusal{status: status, msg: fmt.Sprintf(format, args...)}
}

// parse reads what follows the prefix of a download path (already
// percent-decoded by the mux): the skill path and the format its suffix
// names. SKILL.md alone is only served in the RFC's folder.
func parse(rest, prefix string, layout skillarchive.Layout) (request, *refusal) {
	req := request{layout: layout}
	var skill string
	var ok bool
	expected := "<id>.zip or <id>.tar.gz, with @<version> after the id for a version"
	if layout == skillarchive.Flat {
		expected = "<id>/SKILL.md, <id>.zip or <id>.tar.gz, with @<version> after the id for a version (the index is " + IndexPath + ")"
		if skill, ok = strings.CutSuffix(rest, "/"+skillFile); ok {
			req.format = formatSkillMD
		}
	}
	if !ok {
		if skill, ok = strings.CutSuffix(rest, extTarGz); ok {
			req.format = formatTarGz
		} else if skill, ok = strings.CutSuffix(rest, extZip); ok {
			req.format = formatZip
		}
	}
	where := clip(prefix + rest)
	if !ok || skill == "" {
		return req, refuse(404, "nothing is served at %s: expected %s%s", where, prefix, expected)
	}
	id, sel, hasSel := strings.Cut(skill, registry.SelectorSep)
	if err := rules.ValidateID(id); err != nil {
		return req, refuse(400, "%s names no skill: %v", where, err)
	}
	if hasSel {
		if msg := checkSelector(sel); msg != "" {
			return req, refuse(400, "%s: %s", where, msg)
		}
	}
	req.id, req.sel = id, sel
	return req, nil
}

// checkSelector says what is wrong with a version selector, or "": a
// version number, latest, a label or sha256:<64 lowercase hex>.
func checkSelector(sel string) string {
	switch {
	case sel == "":
		return "empty version selector after @: expected a version number, a label or sha256:<64 hex digits>"
	case strings.HasPrefix(sel, registry.DigestSelectorPrefix):
		return registry.BadDigest(strings.TrimPrefix(sel, registry.DigestSelectorPrefix))
	case strings.Trim(sel, "0123456789") == "":
		if n, err := strconv.Atoi(sel); err != nil || n < 1 || len(sel) > 9 {
			return fmt.Sprintf("invalid version %s: expected a version number from 1", clip(sel))
		}
		return ""
	case sel == history.LatestLabel:
		return ""
	}
	if err := history.CheckLabel(sel); err != nil {
		return err.Error() + " (after @: a version number, a label or sha256:<64 hex digits>)"
	}
	return ""
}

// fileName is the name an archive is saved under: the id's last segment
// and the selector (a digest shortened), letters, digits, '-', '_' and
// '.' only.
func fileName(req request) string {
	name := path.Base(req.id)
	if req.sel != "" {
		sel := req.sel
		if hexSum, ok := strings.CutPrefix(sel, registry.DigestSelectorPrefix); ok {
			sel = "sha256-" + hexSum[:12]
		}
		name += "-" + sel
	}
	if req.format == formatSkillMD {
		return skillFile
	}
	return name + req.format.ext()
}

// clip quotes what a client sent for a message, shortened.
func clip(s string) string {
	if len(s) > 200 {
		return strconv.Quote(s[:200]) + "…"
	}
	return strconv.Quote(s)
}
