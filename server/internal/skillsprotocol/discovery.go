package skillsprotocol

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsext"
)

// UnversionedVersion is the version under which catalog entries without a
// version (iii-published skills, most Agent Skills folders) appear.
const UnversionedVersion = "0.0.0"

// List limits.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// skillView is a catalog entry as the Skills Protocol sees it.
type skillView struct {
	e        *catalog.Entry
	name     string
	version  string
	manifest Manifest
	// exact: a skill with files pinned by the digest of its manifest
	// (version "sha256:<hex>"): every file read is checked against its
	// digest, so nothing but the pinned content is served.
	exact bool
	// selector is the registry version selector a history view was read
	// at ("" for the served content).
	selector string
}

func viewOf(e *catalog.Entry) skillView {
	v := skillView{e: e, name: IDToName(e.ID), version: e.Version}
	if v.version == "" {
		v.version = UnversionedVersion
	}
	if m, ok := e.Extra.(*Manifest); ok && m != nil {
		v.manifest = *m
		return v
	}
	// Not a bundle: an instruction skill under its mapped name.
	v.manifest = Manifest{Name: v.name, Version: v.version, Kind: KindInstruction,
		Description: entryDescription(e), Permissions: Permissions{Secrets: []string{}}}
	return v
}

func (v skillView) namespace() string {
	ns, _, _ := strings.Cut(v.name, ".")
	return ns
}

// entryDescription is one line: the frontmatter description, else the
// body's first paragraph, else its title.
func entryDescription(e *catalog.Entry) string {
	d, _ := e.Frontmatter.Fields.String("description")
	if strings.TrimSpace(d) == "" && e.HasDescription {
		d = e.Description
	}
	if strings.TrimSpace(d) == "" {
		d = e.DisplayTitle()
	}
	d = strings.Join(strings.Fields(d), " ")
	if len(d) > 1024 {
		cut := 1024
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut]
	}
	return d
}

// entry is id's entry as the Skills Protocol serves it: the catalog's
// effective one, except that a skill registered over iii (skills::register,
// which outranks folders on the registry's own surfaces) or one a download
// wrote does not take a name the operator serves from a folder here, where
// a name runs code and receives secrets: the rule of bundles published
// over iii (Options.PublishedMayShadowFolders lifts it for registered
// skills).
func (r *Runtime) entry(id string) (*catalog.Entry, bool) {
	e, ok := r.cat.Get(id)
	switch {
	case !ok:
		return e, ok
	case e.Origin.Downloaded:
	case e.Origin.Kind != catalog.OriginPublished || r.opts.PublishedMayShadowFolders:
		return e, true
	}
	if f, held := r.folderHolder(id); held {
		return f, true
	}
	return e, true
}

// entryVersions lists the versions of id from the source entry(id) comes
// from, highest first.
func (r *Runtime) entryVersions(id string) []*catalog.Entry {
	e, ok := r.entry(id)
	if !ok {
		return nil
	}
	if s := r.cat.Source(e.SourceName()); s != nil {
		return s.Versions(id)
	}
	return []*catalog.Entry{e}
}

// find resolves name and an optional version to a catalog entry.
func (r *Runtime) find(name, version string) (skillView, *Error) {
	if name == "" {
		return skillView{}, invalidParams("name is required (a skill name such as salesforce.leads.sync; list_skills shows them)")
	}
	id := NameToID(name)
	if id == r.guide.ID && (version == "" || version == r.guide.Version) {
		return viewOf(r.guide), nil
	}
	if version == "" {
		e, ok := r.entry(id)
		if !ok {
			return skillView{}, invalidParams("unknown skill %q (list_skills shows the available names)", name)
		}
		return viewOf(e), nil
	}
	if strings.HasPrefix(version, registry.DigestSelectorPrefix) {
		return r.findPinned(name, id, version)
	}
	versions := r.entryVersions(id)
	if len(versions) == 0 {
		return skillView{}, invalidParams("unknown skill %q (list_skills shows the available names)", name)
	}
	var have []string
	for _, e := range versions {
		v := viewOf(e)
		if v.version == version {
			return v, nil
		}
		have = append(have, v.version)
	}
	if v, ok := r.historyView(id, version); ok { // a registry version or label (history.go)
		return v, nil
	}
	return skillView{}, invalidParams("skill %q has no version %q (available: %s)", name, version, strings.Join(have, ", "))
}

func (r *Runtime) versionsOf(id string) []string {
	if id == r.guide.ID {
		return []string{r.guide.Version}
	}
	vs := r.entryVersions(id)
	out := make([]string, 0, len(vs))
	for _, e := range vs {
		out = append(out, viewOf(e).version)
	}
	return append(out, r.registryVersions(id, out)...)
}

type listParams struct {
	Namespace *string `json:"namespace"`
	Detail    *string `json:"detail"`
	Limit     *int    `json:"limit"`
	Cursor    *string `json:"cursor"`
}

const cursorPrefix = "after:"

func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return "", false
	}
	return strings.TrimPrefix(string(b), cursorPrefix), true
}

func (r *Runtime) listSkills(p listParams) (any, *Error) {
	detail := "names"
	if p.Detail != nil {
		detail = *p.Detail
	}
	if detail != "names" && detail != "summary" {
		return nil, invalidParams(`detail %q must be "names" or "summary"`, detail)
	}
	limit := DefaultListLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, invalidParams("limit %d must be between 1 and %d", limit, MaxListLimit)
	}
	entries := r.withGuide(r.cat.List()) // sorted by id; '/'->'.' keeps the order
	prefix := ""
	if p.Namespace != nil && *p.Namespace != "" {
		prefix = NameToID(strings.TrimSuffix(*p.Namespace, "."))
	}
	start := sort.Search(len(entries), func(i int) bool { return entries[i].ID >= prefix })
	if p.Cursor != nil && *p.Cursor != "" {
		after, ok := decodeCursor(*p.Cursor)
		if !ok {
			return nil, invalidParams("cursor %q is not a cursor this server returned (pass next_cursor back unchanged)", *p.Cursor)
		}
		if c := sort.Search(len(entries), func(i int) bool { return entries[i].ID > after }); c > start {
			start = c
		}
	}
	skills := make([]map[string]any, 0, min(limit, 64))
	var next any
	var last string
	for i := start; i < len(entries); i++ {
		id := entries[i].ID
		if prefix != "" {
			if !strings.HasPrefix(id, prefix) {
				break
			}
			if id != prefix && id[len(prefix)] != '/' {
				continue
			}
		}
		if len(skills) == limit {
			next = encodeCursor(last)
			break
		}
		v := viewOf(entries[i])
		item := map[string]any{"name": v.name, "version": v.version}
		if detail == "summary" {
			item["description"] = v.manifest.Description
			item["namespace"] = v.namespace()
			item["kind"] = v.manifest.Kind
		}
		skills = append(skills, item)
		last = id
	}
	return map[string]any{"skills": skills, "next_cursor": next}, nil
}

// withGuide is entries (sorted by id) with the built-in guide in its
// place, replacing a catalog entry of the same id, and each id's entry as
// entry serves it (a folder's rather than a skill registered over iii).
// The catalog's List is a shared snapshot, so the result is a copy; the
// copy is cached per catalog generation.
func (r *Runtime) withGuide(entries []*catalog.Entry) []*catalog.Entry {
	gen := r.cat.Generation()
	if c := r.listCache.Load(); c != nil && c.gen == gen && len(c.src) == len(entries) && (len(entries) == 0 || &c.src[0] == &entries[0]) {
		return c.out
	}
	i := sort.Search(len(entries), func(i int) bool { return entries[i].ID >= r.guide.ID })
	out := make([]*catalog.Entry, 0, len(entries)+1)
	out = append(out, entries[:i]...)
	out = append(out, r.guide)
	if i < len(entries) && entries[i].ID == r.guide.ID {
		i++
	}
	out = append(out, entries[i:]...)
	for i, e := range out {
		if e.Origin.Kind == catalog.OriginPublished || e.Origin.Downloaded {
			out[i], _ = r.entry(e.ID)
		}
	}
	r.listCache.Store(&listCache{gen: gen, src: entries, out: out})
	return out
}

type listCache struct {
	gen      uint64
	src, out []*catalog.Entry
}

type describeParams struct {
	Name    string  `json:"name"`
	Version string  `json:"version"`
	Detail  *string `json:"detail"`
}

func (r *Runtime) describeSkill(ctx context.Context, p describeParams) (any, *Error) {
	detail := "summary"
	if p.Detail != nil {
		detail = *p.Detail
	}
	if detail != "manifest" && detail != "summary" && detail != "full" {
		return nil, invalidParams(`detail %q must be "manifest", "summary" or "full"`, detail)
	}
	v, perr := r.find(p.Name, p.Version)
	if perr != nil {
		return nil, perr
	}
	out := map[string]any{"name": v.name, "version": v.version, "manifest": v.manifest}
	if detail == "manifest" {
		return out, nil
	}
	out["kind"] = v.manifest.Kind
	out["description"] = v.manifest.Description
	out["namespace"] = v.namespace()
	out["versions"] = r.versionsOf(v.e.ID)
	sum := skillsext.ContentDigest(v.e)
	out["sha256"] = hex.EncodeToString(sum[:])
	r.addFacts(out, v)
	fm := map[string]any{}
	for _, f := range v.e.Frontmatter.Fields {
		fm[f.Key] = f.Value
	}
	out["frontmatter"] = fm
	if detail == "full" {
		body, err := v.e.Body.String()
		if err != nil {
			return nil, internalError("read the instructions of %s %s: %v", v.name, v.version, err)
		}
		out["instructions"] = body
		r.readCounted(ctx, v, p.Version)
		files := []map[string]any{}
		for _, f := range skillFiles(v.e) {
			files = append(files, map[string]any{"path": f.Path, "size": f.Size, "sha256": f.Digest.String(), "mime": f.MIME})
		}
		out["files"] = files
	}
	return out, nil
}

// skillFiles are e's files; an entry without files (a skill published
// over iii) has one: SKILL.md, its markdown.
func skillFiles(e *catalog.Entry) []catalog.File {
	if len(e.Files) > 0 {
		return e.Files
	}
	body, err := e.Body.String()
	if err != nil {
		return nil
	}
	text := body
	if e.Frontmatter.Present {
		text = "---\n" + e.Frontmatter.Raw + "---\n" + body
	}
	return []catalog.File{catalog.NewFile(InstructionsFile, []byte(text), e.Modified, nil)}
}

type readFileParams struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Path    string `json:"path"`
}

// readSkillFile answers a file's content; its bytes are drawn from the
// answer budget before the file is read, and written to the response from
// the one copy read (bigResult).
// findPinned resolves version "sha256:<hex>": a skill with files whose
// manifest has that digest (skillsext.Manifest), or a registry version of
// a published skill with content of that digest.
func (r *Runtime) findPinned(name, id, version string) (skillView, *Error) {
	if err := registry.CheckSelector(version); err != nil {
		return skillView{}, invalidParams("%v", err)
	}
	e, ok := r.entry(id)
	if !ok {
		return skillView{}, invalidParams("unknown skill %q (list_skills shows the available names)", name)
	}
	if len(e.Files) > 0 {
		sum := skillsext.ContentDigest(e)
		if version != registry.DigestSelectorPrefix+hex.EncodeToString(sum[:]) {
			return skillView{}, invalidParams("skill %q has no content with %s (it serves %s)", name, version, sum.String())
		}
		v := viewOf(e)
		v.exact = true
		return v, nil
	}
	if v, ok := r.historyView(id, version); ok {
		return v, nil
	}
	return skillView{}, invalidParams("skill %q has no version with %s", name, version)
}

func (r *Runtime) readSkillFile(ctx context.Context, p readFileParams) (any, *Error) {
	if p.Path == "" {
		return nil, invalidParams("path is required (a file of the skill such as SKILL.md)")
	}
	if err := checkRelPath(p.Path); err != nil {
		return nil, invalidParams("path traversal refused: %v (paths are relative to the skill folder, e.g. SKILL.md or code/main.py)", err)
	}
	v, perr := r.find(p.Name, p.Version)
	if perr != nil {
		return nil, perr
	}
	var file *catalog.File
	files := skillFiles(v.e)
	for i := range files {
		if files[i].Path == p.Path {
			file = &files[i]
			break
		}
	}
	if file == nil {
		paths := make([]string, 0, len(files))
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		return nil, invalidParams("skill %s %s has no file %q (files: %s)", v.name, v.version, p.Path, strings.Join(paths, ", "))
	}
	if perr := r.reserve(ctx, file.Size); perr != nil {
		return nil, perr
	}
	b, err := file.Content.Bytes()
	if err != nil {
		return nil, internalError("read %s of %s %s: %v", p.Path, v.name, v.version, err)
	}
	if v.exact && catalog.DigestOf(b) != file.Digest {
		return nil, invalidParams("skill %s has no content with %s: %s changed since", v.name, p.Version, p.Path)
	}
	if extra := int64(len(b)) - file.Size; extra > 0 { // the file grew since it was scanned
		if perr := r.reserve(ctx, extra); perr != nil {
			return nil, perr
		}
	}
	if file.Path == InstructionsFile {
		r.readCounted(ctx, v, p.Version)
	}
	out := &bigResult{fields: map[string]any{"name": v.name, "version": v.version, "path": file.Path, "mime": file.MIME,
		"size": len(b), "sha256": catalog.DigestOf(b).String()}, bin: b}
	if catalog.IsText(file.MIME) && utf8.Valid(b) || utf8.Valid(b) && !bytes.Contains(b, []byte{0}) {
		out.fields["encoding"] = "utf-8"
	} else {
		out.fields["encoding"], out.b64 = "base64", true
	}
	return out, nil
}
