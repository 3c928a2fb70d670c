package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/wire"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/history"
	"github.com/iii-skills/skills/server/internal/registry"
)

// The page shows the registry's history (docs/versions.md) the way a
// client sees it, over iii: skills::versions / prompts::versions list,
// skill::fetch iii://id@N reads an old body, skills::diff / prompts::diff
// compare, and the actions call skills::label / skills::rollback (and the
// prompts:: equivalents), behind the checks of every other action.

// historyKind is what a history belongs to: a published skill (field id)
// or a registered prompt (field name).
type historyKind = core.Kind

const (
	kindSkill  = core.KindSkill
	kindPrompt = core.KindPrompt
)

// historyHref is the page that shows id's history.
func historyHref(k historyKind, id string) string {
	if k == kindPrompt {
		return promptHref(id)
	}
	return skillHref(id)
}

func promptHref(name string) string { return "/prompt/" + escapePath(name) }

// escapePath escapes each segment of an id for a URL path.
func escapePath(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// listing is the answer of skills::versions (history.Listing).
type listing = history.Listing

// versionRowView is one row of the versions table.
type versionRowView struct {
	Version                  int
	RegisteredAt, Age        string
	Size, SHA256, SHAShort   string
	Message, Author          string
	SignedBy, Key            string // who signed it (docs/trust.md); Key alone: an untrusted key
	Yanked                   string // the yank reason
	Labels                   []labelView
	ViewHref, DiffHref       string
	Served, Newest, Selected bool
}

type labelView struct {
	Name      string
	Version   int
	Protected bool
}

// diffView is a unified diff split into styled lines.
type diffView struct {
	From, To string // as asked (a number or a label)
	FromN    int
	ToN      int
	Lines    []diffLine
	Equal    bool
	Error    string
}

// diffLine is one line of a diff: Class is add, del, hunk, file or ctx.
type diffLine struct{ Class, Text string }

// historyView is everything the versions section of a page shows.
type historyView struct {
	Kind       historyKind
	ID         string
	Href       string // the page of this history
	Rows       []versionRowView
	Labels     []labelView
	Newest     int
	Deprecated string // the id's deprecation message
	Served     int    // the version reads without a selector serve (0: none, every version yanked)
	ServedBy   string // the serve label when it pins Served, else ""
	Error      string // the listing failed (not "no versions")
	None       bool   // the registry keeps no versions of this id
	Diff       *diffView
	Notice     string // what the last action did
	ActionErr  string // why the last action was refused (the registry's words)
	// Actions
	TokenNotSet, NeedToken bool
	Setting                string
	Protected              []string
	AdminOn                bool   // the page passes the admin token (the operator's choice)
	FromSel, ToSel         string // the compare form's current choice
}

// selectorOK accepts a version number, a label name (latest included) or
// a content pin sha256:<hex>; anything else never reaches the registry.
func selectorOK(sel string) bool {
	if n, err := strconv.Atoi(sel); err == nil {
		return n >= 1
	}
	if strings.HasPrefix(sel, registry.DigestSelectorPrefix) {
		return registry.CheckSelector(sel) == nil
	}
	return sel == history.LatestLabel || history.CheckLabel(sel) == nil
}

// unyanked is n when it is not yanked in l, else the newest version that
// is not (what reads without a selector serve); 0 when every one is.
func unyanked(l listing, n int) int {
	for _, v := range l.Versions {
		if v.Version == n && v.Yanked == "" {
			return n
		}
	}
	for _, v := range l.Versions { // newest first
		if v.Yanked == "" {
			return v.Version
		}
	}
	return 0
}

// loadHistory lists id's versions and, when the query asks, a diff.
func (s *Server) loadHistory(ctx context.Context, r *http.Request, kind historyKind, id string) *historyView {
	v := &historyView{Kind: kind, ID: id, Href: historyHref(kind, id), TokenNotSet: s.opts.ActionTokens == nil, Setting: s.opts.TokenSetting,
		AdminOn: s.opts.AdminToken != ""}
	v.NeedToken = !v.TokenNotSet // every action names who acts (actions.go)
	v.Protected = slices.Clone(s.opts.ProtectedLabels)
	var l listing
	if err := s.ask(ctx, kind.Function("versions"), func(ctx context.Context) (err error) {
		l, err = s.opts.Registry.Versions(ctx, kind, id)
		return err
	}); err != nil {
		if isNoHistory(err) {
			v.None = true
		} else {
			v.Error = registryWords(err)
		}
		return v
	}
	v.Newest, v.Served, v.Deprecated = l.Latest, l.Latest, l.Deprecated
	if sl := s.opts.ServeLabel; sl != "" {
		if n, ok := l.Labels[sl]; ok {
			v.Served, v.ServedBy = n, sl
		}
	}
	v.Served = unyanked(l, v.Served)
	names := make([]string, 0, len(l.Labels))
	for name := range l.Labels {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v.Labels = append(v.Labels, labelView{Name: name, Version: l.Labels[name], Protected: slices.Contains(s.opts.ProtectedLabels, name)})
	}
	now := time.Now()
	for i, ver := range l.Versions {
		row := versionRowView{Version: ver.Version, RegisteredAt: ver.RegisteredAt, Size: humanSize(int64(ver.Bytes)),
			SHA256: ver.SHA256, SHAShort: shortSHA(ver.SHA256), Message: ver.Message, Author: ver.Author,
			Key: ver.Key, Yanked: ver.Yanked, Served: ver.Version == v.Served, Newest: ver.Version == l.Latest}
		if ver.SignedBy != nil {
			row.SignedBy = *ver.SignedBy
		}
		if t, err := time.Parse(time.RFC3339Nano, ver.RegisteredAt); err == nil {
			row.Age = age(t, now)
		}
		for _, name := range ver.Labels {
			row.Labels = append(row.Labels, labelView{Name: name, Version: ver.Version, Protected: slices.Contains(s.opts.ProtectedLabels, name)})
		}
		if kind == kindSkill {
			row.ViewHref = v.Href + "?version=" + strconv.Itoa(ver.Version) + "#body-h"
		}
		if i+1 < len(l.Versions) { // against the next older kept version
			row.DiffHref = v.Href + "?from=" + strconv.Itoa(l.Versions[i+1].Version) + "&to=" + strconv.Itoa(ver.Version) + "#diff-h"
		}
		v.Rows = append(v.Rows, row)
	}
	v.Notice = actionNotice(r.URL.Query())
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	v.FromSel, v.ToSel = from, to
	if v.FromSel == "" && len(l.Versions) > 1 {
		v.FromSel = strconv.Itoa(l.Versions[1].Version)
	}
	if v.ToSel == "" {
		v.ToSel = strconv.Itoa(l.Latest)
	}
	if from != "" || to != "" {
		v.Diff = s.loadDiff(ctx, kind, id, from, to)
	}
	return v
}

// loadDiff asks the registry for a unified diff and splits it for display.
func (s *Server) loadDiff(ctx context.Context, kind historyKind, id, from, to string) *diffView {
	d := &diffView{From: from, To: to}
	if !selectorOK(from) || !selectorOK(to) {
		d.Error = fmt.Sprintf("Compare needs two versions: a version number (1, 2, …) or a label (latest, production, …); got from %q and to %q.", from, to)
		return d
	}
	var out core.DiffResult
	if err := s.ask(ctx, kind.Function("diff"), func(ctx context.Context) (err error) {
		out, err = s.opts.Registry.Diff(ctx, kind, core.DiffInput{ID: id, From: from, To: to})
		return err
	}); err != nil {
		d.Error = registryWords(err)
		return d
	}
	d.FromN, d.ToN = out.From, out.To
	d.Equal = out.Diff == ""
	d.Lines = diffLines(out.Diff)
	return d
}

// maxDiffLines bounds a diff shown on the page (two 1 MiB bodies can
// differ on every line).
const maxDiffLines = 20000

// diffLines classifies each line of a unified diff. The text stays as it
// is (html/template escapes it); the +/- marks stay in the text so the
// diff reads without colour too.
func diffLines(diff string) []diffLine {
	if diff == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	out := make([]diffLine, 0, min(len(lines), maxDiffLines+1))
	inHunk := false
	for i, l := range lines {
		if i == maxDiffLines {
			out = append(out, diffLine{Class: "hunk", Text: fmt.Sprintf("… %d more lines not shown", len(lines)-i)})
			break
		}
		class := "ctx"
		switch {
		case !inHunk && (strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class, inHunk = "hunk", true
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		case strings.HasPrefix(l, `\`):
			class = "hunk"
		}
		out = append(out, diffLine{Class: class, Text: l})
	}
	return out
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// isNoHistory: the registry keeps no versions of the id (never published,
// or a folder skill), or it has no versions functions (an older registry).
// Our registry names the verdict by code: NOT_FOUND is the only one a
// listing (skills::versions, prompts::versions) answers, for an id with no
// versions ("skill a/b has no versions"); any other code is a failure. The
// message is matched only under the generic invocation_failed, from a
// registry that does not name its verdicts.
func isNoHistory(err error) bool {
	var ie *iii.InvocationError
	if !errors.As(err, &ie) {
		return false
	}
	switch ie.Code {
	case rules.CodeNotFound, wire.CodeFunctionNotFound:
		return true
	case wire.CodeInvocationFailed:
		return strings.HasSuffix(ie.Message, " has no versions")
	}
	return false
}

// registryWords is an iii error as the registry said it: its message,
// without the code and function id around it.
func registryWords(err error) string {
	var ie *iii.InvocationError
	if errors.As(err, &ie) && ie.Message != "" {
		return ie.Message
	}
	return err.Error()
}

// actionNotice is the sentence a successful action redirects to; it is
// built from checked values only (a link cannot make the page say anything
// else).
func actionNotice(q url.Values) string {
	v, err := strconv.Atoi(q.Get("v"))
	if err != nil || v < 1 {
		return ""
	}
	switch q.Get("done") {
	case "label":
		if label := q.Get("label"); history.CheckLabel(label) == nil {
			return fmt.Sprintf("Label %s now points at version %d.", label, v)
		}
	case "rollback":
		from, err := strconv.Atoi(q.Get("rolled"))
		if err != nil || from < 1 {
			return ""
		}
		if q.Get("created") == "0" {
			return fmt.Sprintf("Version %d already holds the content of version %d: nothing to roll back.", v, from)
		}
		return fmt.Sprintf("Rolled back: version %d now holds the content of version %d.", v, from)
	}
	return ""
}

// oldVersion reads version sel of a skill as iii://id@sel, as any client
// reads it.
func (s *Server) oldVersion(ctx context.Context, id, sel string) (string, error) {
	if !selectorOK(sel) {
		return "", fmt.Errorf("%q is not a version: expected a version number (1, 2, …), a label (latest, production, …) or sha256:<64 lowercase hex>", sel)
	}
	var res registry.ReadResult
	if err := s.ask(ctx, rules.FnSkillsResourcesRead, func(ctx context.Context) (err error) {
		res, err = s.opts.Registry.Read(ctx, registry.SkillURI(id)+"@"+sel)
		return err
	}); err != nil {
		return "", errors.New(registryWords(err))
	}
	if len(res.Contents) != 1 {
		return "", fmt.Errorf("reading iii://%s@%s answered %d contents", id, sel, len(res.Contents))
	}
	return res.Contents[0].Text, nil
}

// ---- actions ----

// actionAllowed applies the checks every action shares (same-origin form
// post, CSRF value, the form's token naming who acts: actions.go) and
// answers the refusal itself; ok false when it refused.
func (s *Server) actionAllowed(w http.ResponseWriter, r *http.Request, what string) (Actor, bool) {
	if why := s.checkPost(r); why != "" {
		s.fail(w, r, http.StatusForbidden, "Refused: "+why)
		return Actor{}, false
	}
	a, status, why := s.actor(r, what)
	if why != "" {
		s.fail(w, r, status, "Refused: "+why)
		return Actor{}, false
	}
	return a, true
}

// actionTarget reads the kind and id of an action's form.
func actionTarget(r *http.Request) (historyKind, string, string) {
	kind := historyKind(r.PostFormValue("kind"))
	id := r.PostFormValue("id")
	switch {
	case kind != kindSkill && kind != kindPrompt:
		return "", "", fmt.Sprintf("the form's kind is %q: expected skill or prompt", kind)
	case id == "":
		return "", "", "the form names no " + string(kind)
	}
	return kind, id, ""
}

// moveLabel points a label at a version (skills::label / prompts::label).
// The page sends an admin token only when the operator gave it one.
func (s *Server) moveLabel(w http.ResponseWriter, r *http.Request) {
	actor, ok := s.actionAllowed(w, r, "move a label")
	if !ok {
		return
	}
	kind, id, bad := actionTarget(r)
	label, ver := strings.TrimSpace(r.PostFormValue("label")), r.PostFormValue("version")
	if bad == "" {
		if err := history.CheckLabel(label); err != nil {
			bad = err.Error()
		} else if !selectorOK(ver) {
			bad = fmt.Sprintf("%q is not a version: expected a version number or a label", ver)
		}
	}
	if bad != "" {
		s.actionFailed(w, r, kind, id, "Refused: "+bad)
		return
	}
	// The admin token moves protected labels; a team's token only when
	// the operator gave the page the admin token (--web-admin-labels).
	in := core.LabelInput{ID: id, Label: label, Version: ver, AdminToken: actor.AdminToken}
	if in.AdminToken == "" {
		in.AdminToken = s.opts.AdminToken
	}
	var out history.LabelMove
	if err := s.ask(r.Context(), kind.Function("label"), func(ctx context.Context) (err error) {
		out, err = s.opts.Registry.Label(ctx, actor.Caller, kind, in)
		return err
	}); err != nil {
		msg := "The registry refused to move the label: " + registryWords(err)
		if slices.Contains(s.opts.ProtectedLabels, label) && in.AdminToken == "" {
			msg += " (Protected labels move with the registry's admin token: enter it instead of your team's, or use `skills label " + id + " " + label + " VERSION --admin-token …`; see docs/web.md.)"
		}
		s.actionFailed(w, r, kind, id, msg)
		return
	}
	s.opts.Logger.Info("web: label moved", "by", actor.Name, "kind", string(kind), "id", id, "label", label, "version", out.Version, "previous", out.Previous)
	q := url.Values{"done": {"label"}, "label": {label}, "v": {strconv.Itoa(out.Version)}}
	http.Redirect(w, r, historyHref(kind, id)+"?"+q.Encode()+"#versions-h", http.StatusSeeOther)
}

// rollback registers a version's content again as the newest version
// (skills::rollback / prompts::rollback).
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	actor, ok := s.actionAllowed(w, r, "roll back")
	if !ok {
		return
	}
	kind, id, bad := actionTarget(r)
	ver, msg := r.PostFormValue("version"), strings.TrimSpace(r.PostFormValue("message"))
	if bad == "" && !selectorOK(ver) {
		bad = fmt.Sprintf("%q is not a version: expected a version number or a label", ver)
	}
	if bad != "" {
		s.actionFailed(w, r, kind, id, "Refused: "+bad)
		return
	}
	in := core.RollbackInput{ID: id, Version: ver, Meta: history.Meta{Message: msg, Author: "skills web page"}}
	var out core.RollbackResult
	if err := s.ask(r.Context(), kind.Function("rollback"), func(ctx context.Context) (err error) {
		out, err = s.opts.Registry.Rollback(ctx, actor.Caller, kind, in)
		return err
	}); err != nil {
		s.actionFailed(w, r, kind, id, "The registry refused the rollback: "+registryWords(err))
		return
	}
	s.opts.Logger.Info("web: rolled back", "by", actor.Name, "kind", string(kind), "id", id, "version", out.Version, "rolled_back", out.RolledBack, "created", out.Created)
	created := "1"
	if !out.Created {
		created = "0"
	}
	q := url.Values{"done": {"rollback"}, "rolled": {strconv.Itoa(out.RolledBack)}, "v": {strconv.Itoa(out.Version)}, "created": {created}}
	http.Redirect(w, r, historyHref(kind, id)+"?"+q.Encode()+"#versions-h", http.StatusSeeOther)
}

// actionFailed shows the page of the history the action was on with why
// it failed (the registry's own words), or an error page when the form
// named none.
func (s *Server) actionFailed(w http.ResponseWriter, r *http.Request, kind historyKind, id, msg string) {
	switch kind {
	case kindSkill:
		if _, ok := s.cat.Get(id); ok {
			s.showSkill(w, r, id, http.StatusBadRequest, msg)
			return
		}
	case kindPrompt:
		s.showPrompt(w, r, id, http.StatusBadRequest, msg)
		return
	}
	s.fail(w, r, http.StatusBadRequest, msg)
}

// ---- a prompt's page ----

type promptPageData struct {
	Prompt     *promptRow // nil: not registered now
	Name       string
	Error      string
	History    *historyView
	Registered bool
}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	s.showPrompt(w, r, r.PathValue("name"), http.StatusOK, "")
}

// showPrompt renders a registered prompt's page: its definition, versions,
// a diff and the label and rollback forms. actionErr (with a non-200
// status) says why an action was refused; such a page is not live, since
// its URL is the action's.
func (s *Server) showPrompt(w http.ResponseWriter, r *http.Request, name string, status int, actionErr string) {
	d := promptPageData{Name: name}
	list := s.promptList(r.Context())
	for i := range list.Registered {
		if list.Registered[i].Name == name {
			d.Prompt = &list.Registered[i]
		}
	}
	if len(list.Errors) > 0 {
		d.Error = strings.Join(list.Errors, "; ")
	}
	d.History = s.loadHistory(r.Context(), r, kindPrompt, name)
	if d.Prompt == nil && d.History.None {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("No prompt is registered as %q, and the registry keeps no versions of it.", name))
		return
	}
	d.History.ActionErr = actionErr
	live := "prompt:" + name
	if actionErr != "" {
		live = ""
	}
	s.render(w, r, status, "prompt", &page{Title: "Prompt " + name, Nav: "prompts", Live: live, Data: d})
}
