package skillsext

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/sortedset"
)

// ErrNoSuchFile is returned by ReadFile for an unknown skill or file.
var ErrNoSuchFile = errors.New("no such skill file")

// view is one skill as served, with what is needed to read its files.
//
// A published skill's SKILL.md (a frontmatter header, then the body) is
// never held whole: the body lives once, in the catalog entry, and only
// the header (a few dozen bytes) is kept beside it. The header, the
// frontmatter JSON, the dynamic flag, the size and the digest are computed
// once per change, on first use; reads only look them up.
type view struct {
	entry *catalog.Entry
	// path is the skill path served when it is not entry.ID: a registry
	// version of a published skill, <id>@<version> (versions.go).
	path   string
	folder *Skill // a folder skill's Skill, built once (nil for published)
	// exact: a pin of a folder skill (<id>@sha256:<hex>): every file read
	// is checked against its digest, so nothing but the pinned content is
	// served even while the folder changes on disk.
	exact bool
	// facts: a registry version's facts (versions.go); nil for the served
	// content, whose facts the view's FactsReader gives.
	facts *Facts
	// Published skills: what the synthesized SKILL.md derives from the
	// entry, or why the body could not be read. Computed on first use, not
	// on every registration: a burst of registrations is not slowed by a
	// YAML rendering and a hash per skill that nobody may list.
	digest  sync.Once
	header  []byte          // the frontmatter block that starts SKILL.md
	fm      json.RawMessage // the frontmatter as JSON
	dynamic bool            // the body links to iii://fn/ sections
	size    int64
	sum     catalog.Digest
	problem string
}

// skill is the served form of sv; facts (nil: none) gives the registry's
// facts of a published skill's served version.
func (sv *view) skill(facts *FactsReader) Skill {
	if sv.folder != nil {
		return *sv.folder
	}
	e := sv.entry
	name, desc := publishedName(e)
	s := Skill{Path: e.ID, Name: name, Description: desc, Origin: originOf(e)}
	if sv.path != "" {
		s.Path = sv.path
	}
	sum := ContentDigest(e)
	s.SHA256 = hex.EncodeToString(sum[:])
	switch {
	case sv.facts != nil:
		sv.facts.apply(&s)
	case facts != nil && e.Origin.Kind == catalog.OriginPublished:
		if f, ok := (*facts)(e.ID, sum); ok {
			f.apply(&s)
		}
	}
	sv.digest.Do(sv.computeDigest)
	if sv.problem != "" {
		s.Frontmatter = []byte("{}")
		s.Problem = sv.problem
		return s
	}
	s.Frontmatter = sv.fm
	s.Files = []File{{Path: FileName, Size: sv.size, SHA256: hex.EncodeToString(sv.sum[:]), MIME: "text/markdown"}}
	s.Dynamic = sv.dynamic
	if p := checkName(name); p != "" {
		s.Problem = p
	} else {
		s.Problem = checkLimits(e.ID, s.Files)
	}
	return s
}

// View is the catalog as the extension serves it, in-process. It follows
// the catalog's change events and computes each skill's view (and a
// synthesized SKILL.md's digest) once per change; reads only look up.
type View struct {
	cat    *catalog.Catalog
	cancel func()

	mu   sync.RWMutex
	byID map[string]*view
	// order holds the ids for paging; apply (holding mu) writes it,
	// readers (holding mu.RLock) merge it under orderMu.
	orderMu sync.Mutex
	order   sortedset.Set

	wmu      sync.Mutex
	watchers map[int]func(string)
	nextW    int

	// versions reads registry versions of published skills, facts their
	// signatures, yanks and deprecation (versions.go).
	versions atomic.Pointer[VersionReader]
	facts    atomic.Pointer[FactsReader]
}

// NewView builds the view of c and follows its changes until Close.
func NewView(c *catalog.Catalog) *View {
	v := &View{cat: c, byID: map[string]*view{}, watchers: map[int]func(string){}}
	v.mu.Lock()
	v.cancel = c.Subscribe(v.apply)
	ids := make([]string, 0, len(c.List()))
	for _, e := range c.List() {
		v.byID[e.ID] = build(e)
		ids = append(ids, e.ID)
	}
	v.order.Replace(ids)
	v.mu.Unlock()
	return v
}

// Close stops following the catalog.
func (v *View) Close() { v.cancel() }

// apply handles one catalog change.
func (v *View) apply(ch catalog.Change) {
	var nv *view
	if ch.Op == catalog.OpPut && ch.Entry != nil {
		nv = build(ch.Entry) // outside the lock: a folder skill renders its frontmatter
	}
	v.mu.Lock()
	_, found := v.byID[ch.ID]
	switch {
	case nv != nil:
		if old := v.byID[ch.ID]; old != nil && old.entry == nv.entry {
			v.mu.Unlock()
			return
		}
		v.byID[ch.ID] = nv
		if !found {
			v.order.Add(ch.ID)
		}
	case found:
		delete(v.byID, ch.ID)
		v.order.Remove(ch.ID)
	}
	v.mu.Unlock()
	v.wmu.Lock()
	ws := make([]func(string), 0, len(v.watchers))
	for _, w := range v.watchers {
		ws = append(ws, w)
	}
	v.wmu.Unlock()
	for _, w := range ws {
		w(ch.ID)
	}
}

// ListSkills returns up to limit skills (all when limit <= 0) after the
// path `after`, in path order, and whether more follow.
func (v *View) ListSkills(_ context.Context, after string, limit int) ([]Skill, bool, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	v.orderMu.Lock()
	order := v.order.Sorted()
	v.orderMu.Unlock()
	i := 0
	if after != "" {
		i = sort.SearchStrings(order, after)
		if i < len(order) && order[i] == after {
			i++
		}
	}
	end := len(order)
	if limit > 0 {
		end = min(end, i+limit)
	}
	out := make([]Skill, 0, end-i)
	for _, id := range order[i:end] {
		out = append(out, v.byID[id].skill(v.facts.Load()))
	}
	return out, end < len(order), nil
}

// Skill returns the skill at path.
func (v *View) Skill(_ context.Context, p string) (Skill, bool, error) {
	sv, ok := v.lookup(p)
	if !ok {
		return Skill{}, false, nil
	}
	return sv.skill(v.facts.Load()), true, nil
}

// lookup is the view of the skill at path p: a served skill, or a
// registry version of a published one (<id>@<version>). The catalog is
// asked first: its change events reach the view a moment later, and a
// client that registered a skill and reads it at once must get it.
func (v *View) lookup(p string) (*view, bool) {
	e, served := v.cat.Get(p)
	v.mu.RLock()
	sv, ok := v.byID[p]
	v.mu.RUnlock()
	switch {
	case served && ok && sv.entry == e:
		return sv, true
	case served:
		// Built from the entry the catalog holds now; apply stores it
		// when the change event arrives.
		return build(e), true
	case ok:
		return nil, false // removed from the catalog; the event is on its way
	}
	return v.versionView(p)
}

// ReadFile returns the bytes of one file of the skill at path.
func (v *View) ReadFile(_ context.Context, p, file string) ([]byte, error) {
	b, _, err := v.ReadFileVersion(p, file)
	return b, err
}

// ReadFileVersion is ReadFile with the digest of the bytes returned
// (known already: computed once per change), which names the version
// served.
func (v *View) ReadFileVersion(p, file string) ([]byte, catalog.Digest, error) {
	sv, ok := v.lookup(p)
	if !ok {
		return nil, catalog.Digest{}, ErrNoSuchFile
	}
	if sv.folder == nil {
		sv.digest.Do(sv.computeDigest)
		if file != FileName || sv.problem != "" {
			return nil, catalog.Digest{}, ErrNoSuchFile
		}
		b, err := sv.markdown()
		return b, sv.sum, err
	}
	f, ok := sv.entry.File(file)
	if !ok {
		return nil, catalog.Digest{}, ErrNoSuchFile
	}
	b, err := f.Content.Bytes()
	if err != nil {
		return nil, catalog.Digest{}, fmt.Errorf("read %s of skill %s: %w", file, p, err)
	}
	if sv.exact && catalog.DigestOf(b) != f.Digest {
		return nil, catalog.Digest{}, fmt.Errorf("%w: %s of skill %s changed since the digest pinned was taken", ErrNoSuchFile, file, p)
	}
	return b, f.Digest, nil
}

// Watch calls changed with the path of every skill that changes, from
// its return until stop is called or ctx ends.
func (v *View) Watch(ctx context.Context, changed func(string)) (stop func(), err error) {
	v.wmu.Lock()
	id := v.nextW
	v.nextW++
	v.watchers[id] = changed
	v.wmu.Unlock()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			v.wmu.Lock()
			delete(v.watchers, id)
			v.wmu.Unlock()
		})
	}
	context.AfterFunc(ctx, stop)
	return stop, nil
}

// build computes the served form of one entry.
func build(e *catalog.Entry) *view {
	if _, ok := e.File(FileName); ok {
		return buildFolder(e)
	}
	return buildPublished(e)
}

func lastSegment(id string) string { return path.Base(id) }

// originOf names where e comes from; an entry without a kind was published.
func originOf(e *catalog.Entry) string {
	if e.Origin.Kind == "" {
		return string(catalog.OriginPublished)
	}
	return string(e.Origin.Kind)
}

// buildFolder serves a folder skill's real files and frontmatter.
func buildFolder(e *catalog.Entry) *view {
	s := Skill{Path: e.ID, Files: make([]File, 0, len(e.Files)), Origin: originOf(e)}
	for _, f := range e.Files {
		s.Files = append(s.Files, File{Path: f.Path, Size: f.Size, SHA256: hex.EncodeToString(f.Digest[:]), MIME: f.MIME})
	}
	s.Name, _ = e.Frontmatter.Fields.String("name")
	s.Description, _ = e.Frontmatter.Fields.String("description")
	fm, err := json.Marshal(e.Frontmatter.Fields)
	if err != nil || len(e.Frontmatter.Fields) == 0 {
		fm = []byte("{}")
	}
	s.Frontmatter = fm
	sum := ContentDigest(e)
	s.SHA256 = hex.EncodeToString(sum[:])
	switch {
	case err != nil:
		s.Problem = "frontmatter cannot be rendered as JSON: " + err.Error()
	case s.Name != lastSegment(e.ID):
		s.Problem = fmt.Sprintf("frontmatter name %q must equal the last segment of the skill path %q", s.Name, e.ID)
	case strings.TrimSpace(s.Description) == "":
		s.Problem = "SKILL.md frontmatter has no description (the Agent Skills specification requires one)"
	default:
		if p := checkName(s.Name); p != "" {
			s.Problem = p
		} else {
			s.Problem = checkLimits(e.ID, s.Files)
		}
	}
	return &view{folder: &s, entry: e}
}

// publishedName is a published skill's frontmatter name (the id's last
// segment, as the extension requires) and description (the index
// description, else the title).
func publishedName(e *catalog.Entry) (name, desc string) {
	desc = e.IndexEntry().Description
	if strings.TrimSpace(desc) == "" {
		desc = e.DisplayTitle()
	}
	return lastSegment(e.ID), desc
}

// publishedHeader is the frontmatter block that starts a published
// skill's synthesized SKILL.md.
func publishedHeader(e *catalog.Entry) []byte {
	name, desc := publishedName(e)
	fm := yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "name"}, {Kind: yaml.ScalarNode, Value: name},
		{Kind: yaml.ScalarNode, Value: "description"}, {Kind: yaml.ScalarNode, Value: desc},
	}}
	y, _ := yaml.Marshal(&fm)
	h := make([]byte, 0, len(y)+len("---\n---\n\n"))
	h = append(h, "---\n"...)
	h = append(h, y...)
	return append(h, "---\n\n"...)
}

// markdown is a published skill's synthesized SKILL.md: the header, then
// the body. Call it after sv.digest.
func (sv *view) markdown() ([]byte, error) {
	body, err := sv.entry.Body.String()
	if err != nil {
		return nil, fmt.Errorf("read the body of skill %s: %w", sv.entry.ID, err)
	}
	return append(append(make([]byte, 0, len(sv.header)+len(body)), sv.header...), body...), nil
}

// buildPublished is the view of a skill published over iii; what its
// synthesized SKILL.md derives from the entry comes later (computeDigest),
// and its bytes are never kept.
func buildPublished(e *catalog.Entry) *view {
	return &view{entry: e}
}

// computeDigest sets what a published skill's SKILL.md derives from its
// entry (header, frontmatter JSON, dynamic flag, size and digest), or why
// its body could not be read. Run it through sv.digest.
func (sv *view) computeDigest() {
	body, err := sv.entry.Body.String()
	if err != nil {
		sv.problem = "reading the published body failed: " + err.Error()
		return
	}
	name, desc := publishedName(sv.entry)
	sv.fm, _ = json.Marshal(map[string]string{"name": name, "description": desc})
	sv.header = publishedHeader(sv.entry)
	sv.dynamic = strings.Contains(body, "iii://fn/")
	sum := sha256.New()
	sum.Write(sv.header)
	_, _ = io.WriteString(sum, body)
	sv.size = int64(len(sv.header) + len(body))
	sum.Sum(sv.sum[:0])
}
