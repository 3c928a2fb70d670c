package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/directory"
	"github.com/iii-skills/skills/server/internal/invoke"
	"github.com/iii-skills/skills/server/internal/registry"
)

// page is what every template gets: the shared frame and the page's data.
type page struct {
	Title      string
	Nav        string // which top navigation link is current
	Query      string // the search box's value
	CSRF       string
	Generation uint64
	// Live names what the page shows, for the script: "catalog" (any
	// change re-reads it) or "skill:<id>" (only that id's changes do).
	Live string
	Data any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.CSRF = s.csrfToken(w, r)
	p.Generation = s.cat.Generation()
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		s.opts.Logger.Error("web: rendering a page failed", "page", name, "err", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page that says what went wrong.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", &page{Title: http.StatusText(status), Data: errorData{Status: status, Message: msg}})
}

type errorData struct {
	Status  int
	Message string
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
}

// ---- catalog ----

type skillRow struct {
	ID, Href, Title, Description string
	Origin                       originView
	Size, Age, Modified          string
	Files                        int
	Version                      string
}

type originView struct {
	Kind, Text string
	WorkerID   string // a published skill's publisher, when known
}

type group struct {
	Namespace string // "" for top-level ids
	Skills    []skillRow
}

type nsRow struct {
	Name  string
	Count int
	Href  string
	Open  bool
}

type indexData struct {
	Query, NS   string
	Crumbs      []nsRow // the namespace path to NS
	Namespaces  []nsRow // child namespaces of NS
	Groups      []group
	Total       int
	Page, Pages int
	First, Last int
	Prev, Next  string
	SearchError string
	Removed     string

	// LowConfidence: no skill matches the search well; the results are
	// only the closest (skills::search low_confidence).
	LowConfidence bool
}

// maxQuery bounds a search (characters): a query is a few words.
const maxQuery = 256

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	ns := strings.Trim(r.URL.Query().Get("ns"), "/")
	pageNo, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pageNo = max(pageNo, 1)
	d := indexData{Query: q, NS: ns, Page: pageNo, Removed: r.URL.Query().Get("removed")}
	if utf8.RuneCountInString(q) > maxQuery {
		q = string([]rune(q)[:maxQuery])
		d.Query = q
		d.SearchError = fmt.Sprintf("The search was cut to its first %d characters.", maxQuery)
	}

	var entries []*catalog.Entry
	if q != "" {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.CallTimeout)
		res, err := s.search.Search(ctx, q, 1000)
		cancel()
		if err != nil {
			d.SearchError = "The search failed: " + err.Error()
		}
		d.LowConfidence = res.LowConfidence && len(res.Hits) > 0
		for _, h := range res.Hits {
			if e, ok := s.cat.Get(h.ID); ok && inNamespace(e.ID, ns) {
				entries = append(entries, e)
			}
		}
	} else {
		all := s.treeOrder()
		if ns != "" {
			for _, e := range all {
				if inNamespace(e.ID, ns) {
					entries = append(entries, e)
				}
			}
		} else {
			entries = all
		}
		d.Namespaces = childNamespaces(entries, ns, q)
	}
	for i, seg := range splitNS(ns) {
		path := strings.Join(splitNS(ns)[:i+1], "/")
		d.Crumbs = append(d.Crumbs, nsRow{Name: seg, Href: indexHref("", path, 1)})
	}
	d.Total = len(entries)
	size := s.opts.PageSize
	d.Pages = max((len(entries)+size-1)/size, 1)
	d.Page = min(d.Page, d.Pages)
	lo := (d.Page - 1) * size
	hi := min(lo+size, len(entries))
	d.First, d.Last = lo+1, hi
	if d.Page > 1 {
		d.Prev = indexHref(q, ns, d.Page-1)
	}
	if d.Page < d.Pages {
		d.Next = indexHref(q, ns, d.Page+1)
	}
	now := time.Now()
	pubs := s.publishers(r.Context())
	for _, e := range entries[lo:hi] {
		parent := parentNS(e.ID)
		if q != "" {
			parent = "" // ranked results keep their order
		}
		if len(d.Groups) == 0 || d.Groups[len(d.Groups)-1].Namespace != parent {
			d.Groups = append(d.Groups, group{Namespace: parent})
		}
		g := &d.Groups[len(d.Groups)-1]
		g.Skills = append(g.Skills, rowOf(e, now, pubs))
	}
	title := "Catalog"
	if q != "" {
		title = "Search: " + q
	}
	s.render(w, r, http.StatusOK, "index", &page{Title: title, Nav: "catalog", Query: q, Live: "catalog", Data: d})
}

// treeOrder is the catalog sorted by namespace, then id, so that a page
// shows each namespace's skills together; it is rebuilt once per catalog
// generation.
func (s *Server) treeOrder() []*catalog.Entry {
	gen := s.cat.Generation()
	if t := s.tree.Load(); t != nil && t.gen == gen {
		return t.entries
	}
	list := slices.Clone(s.cat.List())
	slices.SortFunc(list, func(a, b *catalog.Entry) int {
		if c := strings.Compare(parentNS(a.ID), parentNS(b.ID)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	s.tree.Store(&treeCache{gen: gen, entries: list})
	return list
}

type treeCache struct {
	gen     uint64
	entries []*catalog.Entry
}

func rowOf(e *catalog.Entry, now time.Time, pubs *publisherLookup) skillRow {
	return skillRow{ID: e.ID, Href: skillHref(e.ID), Title: e.DisplayTitle(), Description: clip(e.Description, 280),
		Origin: originOf(e, pubs), Size: humanSize(entrySize(e)), Age: age(e.Modified, now), Modified: isoTime(e.Modified),
		Files: len(e.Files), Version: e.Version}
}

// entrySize is what a skill weighs: its files, or its body when it has none
// (a published skill).
func entrySize(e *catalog.Entry) int64 {
	if len(e.Files) == 0 {
		return e.Body.Size()
	}
	return e.TotalSize()
}

// originOf says where a skill comes from; for a published one, which worker
// published it when pubs knows.
func originOf(e *catalog.Entry, pubs *publisherLookup) originView {
	o := e.Origin
	switch o.Kind {
	case catalog.OriginPublished:
		if text, workerID := pubs.publishedBy(kindSkill, e.ID); text != "" {
			return originView{Kind: "published", Text: text, WorkerID: workerID}
		}
		return originView{Kind: "published", Text: "published by a worker (" + rules.FnSkillsRegister + ")"}
	case catalog.OriginFolder:
		return originView{Kind: "folder", Text: "folder " + catalog.DisplaySource(o.Source) + " · " + o.Path}
	case catalog.OriginBundle:
		return originView{Kind: "bundle", Text: "bundle " + catalog.DisplaySource(o.Source) + " · " + o.Path}
	case catalog.OriginBuiltin:
		return originView{Kind: "builtin", Text: "built in"}
	}
	return originView{Kind: string(o.Kind), Text: string(o.Kind) + " " + catalog.DisplaySource(o.Source)}
}

func inNamespace(id, ns string) bool { return ns == "" || strings.HasPrefix(id, ns+"/") }

func splitNS(ns string) []string {
	if ns == "" {
		return nil
	}
	return strings.Split(ns, "/")
}

func parentNS(id string) string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		return id[:i]
	}
	return ""
}

// childNamespaces counts the skills under each namespace one level below
// ns, sorted by name.
func childNamespaces(entries []*catalog.Entry, ns, q string) []nsRow {
	prefix := ""
	if ns != "" {
		prefix = ns + "/"
	}
	counts := map[string]int{}
	for _, e := range entries {
		rest := strings.TrimPrefix(e.ID, prefix)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			counts[rest[:i]]++
		}
	}
	rows := make([]nsRow, 0, len(counts))
	for name, n := range counts {
		rows = append(rows, nsRow{Name: name, Count: n, Href: indexHref(q, prefix+name, 1)})
	}
	slices.SortFunc(rows, func(a, b nsRow) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

func indexHref(q, ns string, pageNo int) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if ns != "" {
		v.Set("ns", ns)
	}
	if pageNo > 1 {
		v.Set("page", strconv.Itoa(pageNo))
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// ---- one skill ----

type fieldRow struct{ Key, Value string }

type fileRow struct {
	Path, Size, Digest, MIME, Href string
	Current                        bool
}

type fileView struct {
	Path, MIME, Size, Digest string
	URI                      string // skill://<id>/<path>, percent-encoded as MCP lists it
	Text                     string
	Note                     string // why the content is not shown
}

type versionRow struct {
	Version, Modified string
	Current           bool
}

// oldVersionView says which older version the body shows.
type oldVersionView struct {
	Selector string
	Version  int // 0 when the selector names no kept version
	Newest   int
}

type holderRow struct {
	Source string
	Origin originView
}

type skillData struct {
	Row         skillRow
	Kind        string
	URIs        []string
	Body        any // template.HTML of the rendered markdown
	BodyError   string
	Fields      []fieldRow
	RawFM       string
	Files       []fileRow
	File        *fileView
	Versions    []versionRow // a bundle's versions (the catalog's)
	Holders     []holderRow
	History     *historyView // a published skill's versions (the registry's)
	Folder      string       // a folder skill's file: its history is the folder's
	Viewing     *oldVersionView
	Published   bool
	NeedToken   bool // the unregister form asks for an admin or team token
	TokenNotSet bool // neither is configured: changes are off
	Setting     string
}

// maxTextView is the largest file shown inline.
const maxTextView = 1 << 20

func (s *Server) skill(w http.ResponseWriter, r *http.Request) {
	s.showSkill(w, r, r.PathValue("id"), http.StatusOK, "")
}

// showSkill renders a skill's page. actionErr (with a non-200 status) says
// why an action on its versions was refused; such a page is not live,
// since its URL is the action's.
func (s *Server) showSkill(w http.ResponseWriter, r *http.Request, id string, status int, actionErr string) {
	// The catalog generation and the versions count are read before
	// anything the page shows.
	gen, versions := s.cat.Generation(), s.pages.versions.Load()
	needToken := s.opts.Guard.Token != ""
	if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" && s.hasToken(r) {
		needToken = false
	}
	key := pageKey{uri: r.URL.RequestURI(), needToken: needToken}
	cacheable := status == http.StatusOK && actionErr == "" && r.Method == http.MethodGet
	if cacheable {
		if p, ok := s.pages.get(key, gen); ok {
			s.serveCached(w, r, p)
			return
		}
	}
	e, ok := s.cat.Get(id)
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("No skill has the id %q. It may have been removed; the catalog lists every skill.", id))
		return
	}
	pubs := s.publishers(r.Context())
	d := skillData{Row: rowOf(e, time.Now(), pubs), Kind: string(e.Kind), Published: e.Origin.Kind == catalog.OriginPublished,
		URIs:        []string{registry.SkillURI(e.ID), registry.SkillFileURI(e.ID, "SKILL.md")},
		TokenNotSet: s.opts.ActionTokens == nil, Setting: s.opts.TokenSetting}
	d.NeedToken = !d.TokenNotSet // every action names who acts (actions.go)
	if body, err := e.Body.String(); err != nil {
		d.BodyError = "the body could not be read: " + err.Error()
	} else if html, err := renderMarkdown(s.cat, e, body); err != nil {
		d.BodyError = "the body could not be rendered: " + err.Error()
	} else {
		d.Body = trustedHTML(html)
	}
	d.RawFM = e.Frontmatter.Raw
	for _, f := range e.Frontmatter.Fields {
		d.Fields = append(d.Fields, fieldRow{Key: f.Key, Value: fieldText(f.Value)})
	}
	want := r.URL.Query().Get("file")
	for _, f := range e.Files {
		d.Files = append(d.Files, fileRow{Path: f.Path, Size: humanSize(f.Size), Digest: f.Digest.String(), MIME: f.MIME,
			Href: fileHref(e.ID, f.Path), Current: f.Path == want})
	}
	if want != "" {
		d.File = viewFile(e, want)
	}
	for _, v := range s.cat.Versions(e.ID) {
		if v.Version != "" {
			d.Versions = append(d.Versions, versionRow{Version: v.Version, Modified: isoTime(v.Modified), Current: v == e})
		}
	}
	published := false
	for _, h := range s.cat.Holders(e.ID) {
		d.Holders = append(d.Holders, holderRow{Source: catalog.DisplaySource(h.SourceName()), Origin: originOf(h, pubs)})
		published = published || h.Origin.Kind == catalog.OriginPublished
	}
	if e.Origin.Kind == catalog.OriginFolder {
		d.Folder = e.Origin.Path
	}
	if published { // the registry keeps versions of published content only
		d.History = s.loadHistory(r.Context(), r, kindSkill, e.ID)
		d.History.ActionErr = actionErr
		if sel := r.URL.Query().Get("version"); sel != "" {
			s.showOldVersion(r.Context(), &d, e, sel)
		}
	}
	p := &page{Title: e.DisplayTitle(), Nav: "catalog", Live: "skill:" + e.ID, Data: d}
	if cacheable {
		s.renderCacheable(w, r, key, gen, versions, "skill", p)
		return
	}
	p.Live = "" // the page of an action: its URL is the action's
	s.render(w, r, status, "skill", p)
}

// showOldVersion puts version sel's rendered body in place of the newest.
func (s *Server) showOldVersion(ctx context.Context, d *skillData, e *catalog.Entry, sel string) {
	v := &oldVersionView{Selector: sel, Newest: d.History.Newest}
	if n, err := strconv.Atoi(sel); err == nil {
		v.Version = n
	}
	for _, l := range d.History.Labels {
		if l.Name == sel {
			v.Version = l.Version
		}
	}
	for i := range d.History.Rows {
		d.History.Rows[i].Selected = d.History.Rows[i].Version == v.Version
	}
	d.Viewing = v
	d.Body = nil
	body, err := s.oldVersion(ctx, e.ID, sel)
	if err != nil {
		d.BodyError = "Version " + sel + " could not be read: " + err.Error()
		return
	}
	html, err := renderMarkdown(s.cat, e, body)
	if err != nil {
		d.BodyError = "Version " + sel + " could not be rendered: " + err.Error()
		return
	}
	d.Body = trustedHTML(html)
}

func viewFile(e *catalog.Entry, path string) *fileView {
	f, ok := e.File(path)
	if !ok {
		return &fileView{Path: path, Note: "This skill has no file at that path."}
	}
	v := &fileView{Path: f.Path, MIME: f.MIME, Size: humanSize(f.Size), Digest: f.Digest.String(), URI: registry.SkillFileURI(e.ID, f.Path)}
	switch {
	case !catalog.IsText(f.MIME):
		v.Note = "A binary file (" + f.MIME + "): not shown."
	case f.Size > maxTextView:
		v.Note = "Larger than " + humanSize(maxTextView) + ": not shown."
	default:
		b, err := f.Content.Bytes()
		if err != nil {
			v.Note = "The file could not be read: " + err.Error()
		} else {
			v.Text = string(b)
		}
	}
	return v
}

// fieldText shows a frontmatter value: strings as they are, other values as JSON.
func fieldText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ---- prompts ----

type promptArg struct {
	Name, Description string
	Required          bool
	Value             string
}

type promptRow struct {
	Name, Description, Source string
	Args                      []promptArg
	// Publisher says which worker registered the prompt ("" when not
	// known); PublisherID is that worker's full id.
	Publisher, PublisherID string
	// Unavailable says why the prompt cannot render now (its handler is
	// gone, or on an engine this node does not reach); "" when it can.
	Unavailable string
}

type promptResult struct {
	Name, Source string
	Messages     []promptMessage
	Error        string
}

type promptMessage struct{ Role, Text string }

type promptsData struct {
	Registered  []promptRow
	Folder      []promptRow
	Errors      []string
	Result      *promptResult
	FolderNotOn bool
}

func (s *Server) prompts(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "prompts", &page{Title: "Prompts", Nav: "prompts", Data: s.promptList(r.Context())})
}

func (s *Server) promptList(ctx context.Context) promptsData {
	var d promptsData
	var reg registry.MCPPromptList
	if err := s.ask(ctx, rules.FnPromptsMCPList, func(ctx context.Context) (err error) {
		reg, err = s.opts.Registry.MCPPrompts(ctx)
		return err
	}); err != nil {
		d.Errors = append(d.Errors, err.Error())
	}
	pubs := s.publishers(ctx)
	var handlers map[string]core.PromptHandler
	if len(reg.Prompts) > 0 {
		// Read from what the registry follows: no engine round trip.
		handlers, _ = s.opts.Registry.PromptHandlers(ctx) // nil: every prompt counts as available
	}
	for _, p := range reg.Prompts {
		row := promptRow{Name: p.Name, Description: p.Description, Source: "registered"}
		row.Publisher, row.PublisherID = pubs.publishedBy(kindPrompt, p.Name)
		if h, ok := handlers[p.Name]; ok && !h.Available {
			row.Unavailable = h.Problem
		}
		for _, a := range p.Arguments {
			arg := promptArg{Name: a.Name, Required: a.Required}
			if a.Description != nil {
				arg.Description = *a.Description
			}
			row.Args = append(row.Args, arg)
		}
		d.Registered = append(d.Registered, row)
	}
	if s.opts.Folders == nil {
		d.FolderNotOn = true
		return d
	}
	for _, p := range s.opts.Folders.FolderPrompts() {
		d.Folder = append(d.Folder, promptRow{Name: p.Name, Description: p.Description, Source: "folder"})
	}
	return d
}

// renderPrompt renders one prompt the way an MCP client does
// (prompts::mcp-get runs its handler; a folder prompt is its body).
func (s *Server) renderPrompt(w http.ResponseWriter, r *http.Request) {
	if why := s.checkPost(r); why != "" {
		s.fail(w, r, http.StatusForbidden, "Refused: "+why)
		return
	}
	name, source := r.PostFormValue("name"), r.PostFormValue("source")
	res := &promptResult{Name: name, Source: source}
	d := s.promptList(r.Context())
	if source == "folder" {
		if s.opts.Folders == nil {
			res.Error = "no skills folder is served"
		} else if out, err := s.opts.Folders.FolderPromptNamed(name); err != nil {
			res.Error = registryWords(err)
		} else {
			res.Messages = []promptMessage{{Role: "user", Text: out.Body}}
		}
	} else {
		args := map[string]string{}
		for i := range d.Registered {
			if d.Registered[i].Name != name {
				continue
			}
			for j, a := range d.Registered[i].Args {
				v := r.PostFormValue("arg." + a.Name)
				d.Registered[i].Args[j].Value = v
				if v != "" {
					args[a.Name] = v
				}
			}
		}
		in := registry.PromptGetInput{Name: name}
		in.Arguments, _ = json.Marshal(args) // a map of strings: never fails
		var out registry.PromptGetResult
		if err := s.ask(r.Context(), rules.FnPromptsMCPGet, func(ctx context.Context) (err error) {
			out, err = s.opts.Registry.GetPrompt(ctx, in)
			return err
		}); err != nil {
			res.Error = err.Error()
		}
		for _, raw := range out.Messages {
			var m struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(raw, &m)
			res.Messages = append(res.Messages, promptMessage{Role: m.Role, Text: contentText(m.Content)})
		}
	}
	d.Result = res
	s.render(w, r, http.StatusOK, "prompts", &page{Title: "Prompt " + name, Nav: "prompts", Data: d})
}

// contentText shows an MCP content block: its text, or its JSON.
func contentText(raw json.RawMessage) string {
	var c struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Type == "text" {
		return c.Text
	}
	return string(raw)
}

// ---- diagnostics and workers ----

type diagData struct {
	directory.Diagnostics
	Sources  []catalog.SourceInfo
	Error    string
	NoFolder bool
}

func (s *Server) diagnostics(w http.ResponseWriter, r *http.Request) {
	var d diagData
	if s.opts.Folders == nil {
		d.NoFolder = true
	} else {
		d.Diagnostics = s.opts.Folders.Diagnostics()
	}
	d.Sources = s.cat.Sources()
	for i := range d.Sources {
		d.Sources[i].Name = catalog.DisplaySource(d.Sources[i].Name) // no absolute paths of the server's disk
	}
	s.render(w, r, http.StatusOK, "diagnostics", &page{Title: "Diagnostics", Nav: "diagnostics", Live: "catalog", Data: d})
}

// workerRow is a worker as the workers page shows it.
type workerRow struct {
	Name        string
	Description *string
	Runtime     string
	Version     string
	PID         uint32
	Functions   string
	Active      string
	IP          string
	Since       string
}

func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Workers []iii.WorkerInfo `json:"workers"`
	}
	var d struct {
		Workers []workerRow
		Error   string
	}
	if err := s.engineCall(r.Context(), iii.FnListWorkers, &out); err != nil {
		d.Error = err.Error()
	}
	now := time.Now()
	for _, wk := range out.Workers {
		since := age(time.Time{}, now) // "unknown" unless the engine says
		if ms, err := strconv.ParseInt(iii.RawText(wk.ConnectedAtMs), 10, 64); err == nil {
			since = age(time.UnixMilli(ms), now)
		}
		d.Workers = append(d.Workers, workerRow{Name: wk.StringName(), Description: wk.Description, Runtime: wk.Runtime,
			Version: iii.RawText(wk.Version), PID: wk.PID, Functions: iii.RawText(wk.FunctionCount),
			Active: iii.RawText(wk.ActiveInvocations), IP: iii.RawText(wk.IPAddress), Since: since})
	}
	s.render(w, r, http.StatusOK, "workers", &page{Title: "Workers", Nav: "workers", Data: d})
}

// ---- actions ----

// unregister removes a published skill through skills::unregister, the
// function a worker calls. It needs a same-origin form post with the CSRF
// value, and the listener token (form field, cookie or bearer header).
func (s *Server) unregister(w http.ResponseWriter, r *http.Request) {
	actor, ok := s.actionAllowed(w, r, "unregister a skill")
	if !ok {
		return
	}
	id := r.PostFormValue("id")
	// The admin token removes any id; a team's token only its own.
	var out registry.UnregisterSkillOutput
	if err := s.ask(r.Context(), rules.FnSkillsUnregister, func(ctx context.Context) (err error) {
		out, err = s.opts.Registry.UnregisterSkill(ctx, actor.Caller, id)
		return err
	}); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if !out.Removed {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("No published skill has the id %q (folder and bundle skills are changed in their files).", id))
		return
	}
	s.opts.Logger.Info("web: skill unregistered", "by", actor.Name, "id", id)
	http.Redirect(w, r, "/?removed="+url.QueryEscape(id), http.StatusSeeOther)
}

// ask runs one registry call (named fn in errors) within CallTimeout;
// without a registry it says so.
func (s *Server) ask(ctx context.Context, fn string, call func(context.Context) error) error {
	if s.opts.Registry == nil {
		return errors.New(fn + ": the page has no registry")
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if err := call(ctx); err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	return nil
}

// engineCall asks the engine for one of its listings.
func (s *Server) engineCall(ctx context.Context, fn string, out any) error {
	if s.opts.Engine == nil {
		return errors.New("the page has no connection to the engine")
	}
	err := invoke.Caller{Client: s.opts.Engine, Timeout: s.opts.CallTimeout}.Call(ctx, fn, nil, out)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	return nil
}

// ---- sign-in ----

type signinData struct {
	Next, Setting, Error string
}

func (s *Server) signinForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", &page{Title: "Sign in", Data: signinData{Next: safeNext(r.URL.Query().Get("next")), Setting: s.opts.TokenSetting}})
}

func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	if why := s.checkPost(r); why != "" {
		s.fail(w, r, http.StatusForbidden, "Refused: "+why)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	tok := s.opts.Guard.Token
	if tok == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if !tokenEqual(r.PostFormValue("token"), tok) {
		s.render(w, r, http.StatusUnauthorized, "signin", &page{Title: "Sign in", Data: signinData{Next: next, Setting: s.opts.TokenSetting,
			Error: "That is not the token this server was started with (" + s.opts.TokenSetting + ")."}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.overTLS(r)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
