package directory

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/scope"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// Config is the iii-directory part of config.yaml.
type Config struct {
	// RegistryURL is the base of downloads and the registry proxy
	// (trailing '/' trimmed).
	RegistryURL string
	// DownloadTimeout bounds git clones, registry HTTP calls and the
	// iii://fn/… section triggers of fetch-skill.
	DownloadTimeout time.Duration
	// RegistryCacheTTL keeps registry proxy answers; 0 disables the cache.
	RegistryCacheTTL time.Duration
	// DownloadHosts are the hosts downloads may dial ("github.com": its
	// default port; "git.example:2222": that port), the registry's
	// included. Empty (the default): every download is refused.
	DownloadHosts []string
}

// DefaultConfig is upstream's default.
func DefaultConfig() Config {
	return Config{
		RegistryURL:      DefaultRegistryURL,
		DownloadTimeout:  DefaultDownloadTimeout * time.Millisecond,
		RegistryCacheTTL: DefaultRegistryCacheTTL * time.Millisecond,
	}
}

// Options tune a Directory.
type Options struct {
	Logger *slog.Logger
	// HTTPClient reaches the registry (default: one with DownloadTimeout).
	HTTPClient *http.Client
	// Git is the git binary for downloads (default "git").
	Git string
	// GitEnv is added to git's environment (tests point GIT_SSL_CAINFO
	// at a loopback server's certificate).
	GitEnv []string
	// Version goes into the registry User-Agent (iii-directory/<version>).
	Version string
}

// Directory is the iii-directory v0.5 surface bound to an iii client and
// the skills folders.
type Directory struct {
	client *iii.Client
	set    *fsource.Set
	cat    *catalog.Catalog
	cfg    Config
	opts   Options
	log    *slog.Logger
	http   *http.Client

	skillSubs  *iii.TriggerTypeRef
	promptSubs *iii.TriggerTypeRef

	// downloadHosts and downloadHTTP (d.http whose redirects are checked
	// against them) are what downloads may dial; hostsErr is a malformed
	// download_hosts, reported by Register.
	downloadHosts hostAllowlist
	downloadHTTP  *http.Client
	hostsErr      error

	index atomic.Pointer[renderedIndex]
	cache registryCache
	// stamped: whether invocation metadata carries a caller the engine
	// stamped (SetCallerStamped); downloads refuse scoped tokens.
	stamped scope.Stamped

	// Payloads for skillSubs / promptSubs, in order: an unbounded queue so
	// the folder watcher never waits for subscribers.
	fanMu    sync.Mutex
	fanQueue []any
	fanWake  chan struct{}
	stopFn   func()
	wg       sync.WaitGroup
}

// New binds the surface to client. set holds the skills folders (it may
// hold none: then everything lists empty and download has nowhere to
// write); cat is the catalog the folders feed, for diagnostics.
func New(client *iii.Client, set *fsource.Set, cat *catalog.Catalog, cfg Config, opts Options) *Directory {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Git == "" {
		opts.Git = "git"
	}
	if opts.Version == "" {
		opts.Version = "0.5.0"
	}
	cfg.RegistryURL = strings.TrimRight(cfg.RegistryURL, "/")
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.DownloadTimeout}
	}
	d := &Directory{client: client, set: set, cat: cat, cfg: cfg, opts: opts, log: opts.Logger, http: hc,
		cache: registryCache{entries: map[string]cacheEntry{}}}
	d.downloadHosts, d.hostsErr = newHostAllowlist(cfg.DownloadHosts)
	dl := *hc
	dl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return d.downloadHosts.checkURL(req.URL.String())
	}
	d.downloadHTTP = &dl
	return d
}

type fn struct {
	id, desc string
	h        iii.Handler
	meta     map[string]any
}

// Register declares the two trigger types, then the 15 functions and the
// diagnostics function, and starts forwarding folder changes to the
// on-change subscribers. Call it before the client connects.
func (d *Directory) Register() error {
	if d.hostsErr != nil {
		return d.hostsErr
	}
	var err error
	if d.skillSubs, err = d.client.RegisterTriggerType(TriggerSkillsOnChange, DescSkillsOnChange, iii.AcceptAll(d.log, TriggerSkillsOnChange)); err != nil {
		return err
	}
	if d.promptSubs, err = d.client.RegisterTriggerType(TriggerPromptsOnChange, DescPromptsOnChange, iii.AcceptAll(d.log, TriggerPromptsOnChange)); err != nil {
		return err
	}
	tool := func(label string) map[string]any { return map[string]any{"tool": map[string]any{"label": label}} }
	fns := []fn{
		{FnSkillsList, DescSkillsList, d.skillsList, nil},
		{FnSkillsFetch, DescSkillsFetch, d.fetchSkill, tool("Fetch skill")},
		{FnSkillsDownload, DescSkillsDownload, d.download, tool("Download skills")},
		{FnPromptsList, DescPromptsList, d.promptsList, nil},
		{FnPromptsGet, DescPromptsGet, d.promptsGet, nil},
		{FnFunctionsList, DescFunctionsList, d.functionsList, nil},
		{FnFunctionsInfo, DescFunctionsInfo, d.functionsInfo, nil},
		{FnTriggersList, DescTriggersList, d.triggersList, nil},
		{FnTriggersInfo, DescTriggersInfo, d.triggersInfo, nil},
		{FnRegisteredList, DescRegisteredList, d.registeredList, nil},
		{FnRegisteredInfo, DescRegisteredInfo, d.registeredInfo, nil},
		{FnWorkersList, DescWorkersList, d.workersList, nil},
		{FnWorkersInfo, DescWorkersInfo, d.workersInfo, nil},
		{FnRegistryWorkersList, DescRegistryList, d.registryList, nil},
		{FnRegistryWorkersInfo, DescRegistryInfo, d.registryInfo, nil},
		{FnSkillsDiagnostics, DescDiagnostics, d.diagnostics, nil},
	}
	for _, f := range fns {
		opts := iii.RegisterFunctionOptions{Description: f.desc}
		if f.meta != nil {
			opts.Metadata = f.meta
		}
		if _, err := d.client.RegisterFunction(f.id, f.h, opts); err != nil {
			return err
		}
	}
	d.startFanout()
	return nil
}

// SetCallerStamped tells the directory whether the engine stamps the
// caller into invocation metadata (ours does; the skills binary finds out
// with its probe): see scope.Stamped for which stamps are read before
// and after. Downloads refuse a caller with a scoped token.
func (d *Directory) SetCallerStamped(v bool) { d.stamped.Set(v) }

// Close stops forwarding changes.
func (d *Directory) Close() {
	if d.stopFn != nil {
		d.stopFn()
		d.stopFn = nil
	}
}

// Fired payloads.
type (
	// SkillChange is a directory::skills::on-change payload of a file
	// change: op "put" (created or edited) or "remove", the skill id, the
	// file relative to its folder, source "watch".
	SkillChange struct {
		ID     string `json:"id"`
		Op     string `json:"op"`
		Path   string `json:"path"`
		Source string `json:"source"`
	}
	// PromptChange is the same for directory::prompts::on-change.
	PromptChange struct {
		Name   string `json:"name"`
		Op     string `json:"op"`
		Path   string `json:"path"`
		Source string `json:"source"`
	}
	// DownloadChange is upstream's payload after a download, on both types.
	DownloadChange struct {
		Namespace string `json:"namespace"`
		Op        string `json:"op"`
		Source    string `json:"source"`
	}
)

// startFanout forwards folder changes to the subscribers from one
// goroutine, in order, so a slow subscriber never stalls the watcher.
func (d *Directory) startFanout() {
	d.fanWake = make(chan struct{}, 1)
	var cancel func()
	if d.set != nil {
		cancel = d.set.Subscribe(func(events []fsource.Event) {
			out := make([]any, 0, len(events))
			for _, ev := range events {
				op := string(ev.Op)
				if ev.Kind == fsource.KindPrompt {
					out = append(out, PromptChange{Name: ev.Key, Op: op, Path: ev.Path, Source: "watch"})
				} else {
					out = append(out, SkillChange{ID: ev.Key, Op: op, Path: ev.Path, Source: "watch"})
				}
			}
			d.fanMu.Lock()
			d.fanQueue = append(d.fanQueue, out...)
			d.fanMu.Unlock()
			select {
			case d.fanWake <- struct{}{}:
			default:
			}
		})
	}
	stop := make(chan struct{})
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-d.fanWake:
				d.fanMu.Lock()
				batch := d.fanQueue
				d.fanQueue = nil
				d.fanMu.Unlock()
				for _, p := range batch {
					ref := d.skillSubs
					if _, ok := p.(PromptChange); ok {
						ref = d.promptSubs
					}
					d.fire(ref, p)
				}
			}
		}
	}()
	d.stopFn = func() {
		if cancel != nil {
			cancel()
		}
		close(stop)
		d.wg.Wait()
	}
}

// fire delivers one payload to every subscriber of ref, like upstream:
// failures are logged as "on-change fan-out failed" and swallowed.
func (d *Directory) fire(ref *iii.TriggerTypeRef, payload any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ref.FireJSON(ctx, payload); err != nil {
		d.log.Warn("on-change fan-out failed", "trigger_type", ref.ID(), "err", err)
	}
}

// decode reads a request object; unknown fields are ignored, like serde.
// As upstream's serde structs (and the registry worker), it refuses a
// payload that is not an object, null and an absent payload included:
// "invalid type: null, expected struct ListInput", and a field of the
// wrong type in serde's words, as package registry's decoders do:
// "invalid type: integer `5`, expected a string". Every failure is
// INVALID_ARGUMENTS.
func decode(data json.RawMessage, name string, dst any) error {
	if err := registry.DecodeEmptyInput(data, name); err != nil {
		return invalidArguments(err)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		var te *json.UnmarshalTypeError
		var fields map[string]json.RawMessage
		if errors.As(err, &te) && json.Unmarshal(data, &fields) == nil {
			if v, ok := fields[te.Field]; ok {
				return invalidArguments(registry.InvalidType(v, serdeExpected(te.Type)))
			}
		}
		return invalidArguments(fmt.Errorf("invalid request for %s: %v", name, err))
	}
	return nil
}

// serdeExpected is how serde names what a field of Go type t expects.
func serdeExpected(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a sequence"
	case reflect.Map, reflect.Struct:
		return "a map"
	}
	return "an integer"
}

// ---- skills ----

// skillRow is a directory::skills::list row. SHA256 is ours: the digest
// of the skill's manifest (skillsext.Manifest), which a pin
// iii://<id>@sha256:<hex> names (docs/trust.md).
type skillRow struct {
	ID         string `json:"id"`
	Bytes      int64  `json:"bytes"`
	ModifiedAt string `json:"modified_at"`
	SHA256     string `json:"sha256,omitempty"`
}

func (d *Directory) skills() []*catalog.Entry {
	if d.set == nil {
		return nil
	}
	return d.set.Skills()
}

func (d *Directory) skillsList(_ context.Context, data json.RawMessage) (any, error) {
	if err := decode(data, "ListInput", &struct{}{}); err != nil {
		return nil, err
	}
	entries := d.skills()
	rows := make([]skillRow, 0, len(entries))
	for _, e := range entries {
		row := skillRow{ID: e.ID}
		if len(e.Files) > 0 {
			sum := skillsext.ContentDigest(e)
			row.SHA256 = hex.EncodeToString(sum[:])
		}
		if f, ok := e.MainFile(); ok {
			row.Bytes = f.Size
			row.ModifiedAt = modifiedAt(f.Modified)
		}
		rows = append(rows, row)
	}
	return map[string]any{"skills": rows}, nil
}

// modifiedAt renders an mtime like chrono's to_rfc3339, "" when unknown.
func modifiedAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return registry.Timestamp(t)
}

type renderedIndex struct {
	gen  uint64
	body string
}

// renderIndex is the iii://directory/skills body: the v0.2.2 header, then
// one line per folder skill with its description whole.
func (d *Directory) renderIndex() string {
	var gen uint64
	if d.set != nil {
		gen = d.set.Generation()
	}
	if c := d.index.Load(); c != nil && c.gen == gen && d.set != nil {
		return c.body
	}
	entries := d.skills()
	if len(entries) == 0 {
		return registry.IndexHeader + IndexEmptyLine
	}
	// The description stays whole: no TruncateChars here.
	ies := make([]registry.IndexEntry, len(entries))
	for i, e := range entries {
		ies[i] = registry.IndexEntry{ID: e.ID, Summary: registry.Summary{
			Title: e.Title, HasTitle: e.HasTitle, Description: e.Description, HasDescription: e.HasDescription}}
	}
	body := registry.RenderIndex(ies)
	d.index.Store(&renderedIndex{gen: gen, body: body})
	return body
}

func (d *Directory) fetchSkill(ctx context.Context, data json.RawMessage) (any, error) {
	var in struct {
		URI  *string  `json:"uri"`
		URIs []string `json:"uris"`
	}
	if err := decode(data, "FetchSkillInput", &in); err != nil {
		return nil, err
	}
	uris, err := registry.SelectFetchURIs(in.URI, in.URIs, true)
	if err != nil {
		return nil, invalidArguments(err)
	}
	// Every entry is parsed before anything is read.
	targets := make([]registry.Target, len(uris))
	for i, u := range uris {
		if targets[i], err = parseURI(u); err != nil {
			return nil, invalidArguments(err)
		}
	}
	sections := make([]string, 0, len(uris))
	for i, u := range uris {
		text, err := d.read(ctx, targets[i])
		if err != nil {
			return nil, err
		}
		sections = append(sections, registry.FormatFetchSection(u, text))
	}
	return registry.JoinFetchSections(sections), nil
}

// parseURI is v0.2.2's parser with the index at iii://directory/skills
// (iii://skills is then an ordinary skill id).
func parseURI(uri string) (registry.Target, error) {
	if uri == IndexURI {
		return registry.IndexTarget(), nil
	}
	t, err := registry.ParseURI(uri)
	if err != nil {
		return t, err
	}
	if t.Kind == registry.TargetIndex {
		return registry.SkillTarget(registry.IndexID), nil
	}
	return t, nil
}

func (d *Directory) read(ctx context.Context, t registry.Target) (string, error) {
	switch t.Kind {
	case registry.TargetIndex:
		return d.renderIndex(), nil
	case registry.TargetSkill:
		if text, ok, err := d.skillFile(t.ID); ok {
			return text, err
		}
		if err := registry.ValidateID(t.ID); err != nil {
			return "", invalidArguments(err)
		}
		var e *catalog.Entry
		if d.set != nil {
			e, _ = d.set.Skill(t.ID)
		}
		if e == nil {
			return "", notFound(fmt.Errorf(fmtSkillNotFound, t.ID))
		}
		return e.Body.String()
	default:
		// No hidden-namespace guard in v0.5: any function may back a section.
		out, err := d.client.Trigger(ctx, iii.TriggerRequest{FunctionID: t.FunctionID, Data: json.RawMessage("{}"), Timeout: d.cfg.DownloadTimeout})
		if err != nil {
			var inv *iii.InvocationError
			missing := errors.As(err, &inv) && inv.Code == iii.CodeFunctionNotFound
			err = registry.ErrTrigger(t.FunctionID, iii.RustDisplay(err))
			if missing {
				// No function behind the URI: a verdict on the request.
				return "", notFound(err)
			}
			return "", err
		}
		text, _ := registry.NormalizeSectionOutput(out)
		return text, nil
	}
}

// skillFile serves iii://<skill>/<path>, a file of an Agent Skills folder,
// when id is not itself a folder skill (registry.SplitSkillFile); ok is
// false otherwise and id is read with v0.5's rules.
func (d *Directory) skillFile(id string) (text string, ok bool, err error) {
	if d.set == nil {
		return "", false, nil
	}
	if registry.ValidateID(id) == nil {
		if _, found := d.set.Skill(id); found {
			return "", false, nil
		}
	}
	var e *catalog.Entry
	_, file, ok, err := registry.SplitSkillFile(id, func(s string) bool {
		e, ok = d.set.Skill(s)
		return ok && len(e.Files) > 0
	})
	if err != nil {
		return "", true, invalidArguments(err)
	}
	if !ok {
		return "", false, nil
	}
	text, _, ok, err = catalog.FileText(e, file)
	return text, ok, err
}

// ---- prompts ----

// FolderPrompt is a prompt of a skills folder, as directory::prompts::list
// lists it.
type FolderPrompt struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ModifiedAt  string `json:"modified_at"`
}

// FolderPromptBody is a folder prompt with its body (directory::prompts::get).
type FolderPromptBody struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Body        string `json:"body"`
	ModifiedAt  string `json:"modified_at"`
}

// FolderPrompts lists the prompts of the skills folders.
func (d *Directory) FolderPrompts() []FolderPrompt {
	rows := []FolderPrompt{}
	if d.set != nil {
		for _, p := range d.set.Prompts() {
			rows = append(rows, FolderPrompt{Name: p.Name, Description: p.Description, ModifiedAt: modifiedAt(p.Modified)})
		}
	}
	return rows
}

// FolderPromptNamed reads the folder prompt name: NOT_FOUND when there is
// none, INVALID_ARGUMENTS for a name the rules refuse.
func (d *Directory) FolderPromptNamed(name string) (FolderPromptBody, error) {
	if err := registry.ValidateName(name); err != nil {
		return FolderPromptBody{}, invalidArguments(err)
	}
	var p *fsource.Prompt
	if d.set != nil {
		p, _ = d.set.Prompt(name)
	}
	if p == nil {
		return FolderPromptBody{}, notFound(fmt.Errorf(fmtPromptNotFound, name))
	}
	body, err := p.Body.String()
	if err != nil {
		return FolderPromptBody{}, err
	}
	return FolderPromptBody{p.Name, p.Description, body, modifiedAt(p.Modified)}, nil
}

// SubscribePrompts calls changed after the folder prompts changed (a file
// created, edited or removed), from the folder watcher's goroutine (keep
// it short), until cancel is called.
func (d *Directory) SubscribePrompts(changed func()) (cancel func()) {
	if d.set == nil {
		return func() {}
	}
	return d.set.Subscribe(func(events []fsource.Event) {
		for _, ev := range events {
			if ev.Kind == fsource.KindPrompt {
				changed()
				return
			}
		}
	})
}

func (d *Directory) promptsList(_ context.Context, data json.RawMessage) (any, error) {
	if err := decode(data, "ListInput", &struct{}{}); err != nil {
		return nil, err
	}
	return map[string]any{"prompts": d.FolderPrompts()}, nil
}

func (d *Directory) promptsGet(_ context.Context, data json.RawMessage) (any, error) {
	var in struct {
		Name *string `json:"name"`
	}
	if err := decode(data, "GetPromptInput", &in); err != nil {
		return nil, err
	}
	if in.Name == nil {
		return nil, invalidArguments(fmt.Errorf(registry.FmtMissingField, "name"))
	}
	return d.FolderPromptNamed(*in.Name)
}

// ---- diagnostics ----

// FolderRow is one skills folder in Diagnostics.
type FolderRow struct {
	Folder  string `json:"folder"`
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	Skills  int    `json:"skills"`
	Prompts int    `json:"prompts"`
	Skipped int    `json:"skipped"`
}

// SkippedRow is a file of a folder that is not served, or served with a
// caveat.
type SkippedRow struct {
	Folder string `json:"folder"`
	Path   string `json:"path"`
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// ShadowRow is a skill another source's entry hides.
type ShadowRow struct {
	ID string `json:"id"`
	// Source is hidden by By; both are catalog source names
	// ("published", "folder:<path>").
	Source string `json:"source"`
	By     string `json:"by"`
	// Path is the hidden entry's file, relative to its folder.
	Path string `json:"path,omitempty"`
}

// Diagnostics is what directory::skills::diagnostics answers.
type Diagnostics struct {
	Folders  []FolderRow  `json:"folders"`
	Skipped  []SkippedRow `json:"skipped"`
	Shadowed []ShadowRow  `json:"shadowed"`
	// Warnings: served, with a caveat (SKILL.md metadata that is not
	// a map of strings, a bundle asking for a secret no grant gives it).
	Warnings []SkippedRow `json:"warnings"`
}

// Diagnostics reports the folders, what they skip and what is shadowed.
func (d *Directory) Diagnostics() Diagnostics {
	out := Diagnostics{Folders: []FolderRow{}, Skipped: []SkippedRow{}, Shadowed: []ShadowRow{}, Warnings: []SkippedRow{}}
	if d.set != nil {
		// Folders are named as catalog.DisplaySource names them: the
		// absolute paths of the server's disk stay in its log.
		for _, f := range d.set.Folders() {
			configured := f.Configured
			if filepath.IsAbs(configured) {
				configured = catalog.DisplayRoot(f.Root)
			}
			out.Folders = append(out.Folders, FolderRow{Folder: configured, Path: catalog.DisplayRoot(f.Root), Exists: f.Exists,
				Skills: f.Skills, Prompts: f.Prompts, Skipped: f.Problems})
		}
		for _, p := range d.set.Problems() {
			out.Skipped = append(out.Skipped, SkippedRow{Folder: catalog.DisplayRoot(p.Folder), Path: p.Path, File: catalog.DisplayFile(p.Folder, p.Path), Reason: p.Reason})
		}
		for _, p := range d.set.Warnings() {
			out.Warnings = append(out.Warnings, SkippedRow{Folder: catalog.DisplayRoot(p.Folder), Path: p.Path, File: catalog.DisplayFile(p.Folder, p.Path), Reason: p.Reason})
		}
	}
	if d.cat != nil {
		for _, sh := range d.cat.Shadowed() {
			row := ShadowRow{ID: sh.ID, Source: catalog.DisplaySource(sh.Source), By: catalog.DisplaySource(sh.By)}
			if len(sh.Entries) > 0 {
				row.Path = sh.Entries[len(sh.Entries)-1].Origin.Path
			}
			out.Shadowed = append(out.Shadowed, row)
		}
	}
	return out
}

func (d *Directory) diagnostics(_ context.Context, data json.RawMessage) (any, error) {
	if err := decode(data, "DiagnosticsInput", &struct{}{}); err != nil {
		return nil, err
	}
	return d.Diagnostics(), nil
}
