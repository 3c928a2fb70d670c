package skillsext

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/iii-skills/skills/server/catalog"
)

// ErrNoSuchFile is returned by ReadFile for an unknown skill or file.
var ErrNoSuchFile = errors.New("no such skill file")

// view is one skill as served, with what is needed to read its files.
type view struct {
	skill Skill
	entry *catalog.Entry
	md    []byte // synthesized SKILL.md of a published skill (nil for folder skills)
}

// View is the catalog as the extension serves it, in-process. It follows
// the catalog's change events and computes each skill's view (and a
// synthesized SKILL.md's digest) once per change; reads only look up.
type View struct {
	cat    *catalog.Catalog
	cancel func()

	mu    sync.RWMutex
	byID  map[string]*view
	order []string // ids, sorted

	wmu      sync.Mutex
	watchers map[int]func(string)
	nextW    int
}

// NewView builds the view of c and follows its changes until Close.
func NewView(c *catalog.Catalog) *View {
	v := &View{cat: c, byID: map[string]*view{}, watchers: map[int]func(string){}}
	v.mu.Lock()
	v.cancel = c.Subscribe(v.apply)
	for _, e := range c.List() {
		v.byID[e.ID] = build(e)
		v.order = append(v.order, e.ID)
	}
	v.mu.Unlock()
	return v
}

// Close stops following the catalog.
func (v *View) Close() { v.cancel() }

// apply handles one catalog change.
func (v *View) apply(ch catalog.Change) {
	var nv *view
	if ch.Op == catalog.OpPut && ch.Entry != nil {
		nv = build(ch.Entry) // outside the lock: may hash a synthesized SKILL.md
	}
	v.mu.Lock()
	i, found := slices.BinarySearch(v.order, ch.ID)
	switch {
	case nv != nil:
		if old := v.byID[ch.ID]; old != nil && old.entry == nv.entry {
			v.mu.Unlock()
			return
		}
		v.byID[ch.ID] = nv
		if !found {
			v.order = slices.Insert(v.order, i, ch.ID)
		}
	case found:
		delete(v.byID, ch.ID)
		v.order = slices.Delete(v.order, i, i+1)
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
	i := 0
	if after != "" {
		i = sort.SearchStrings(v.order, after)
		if i < len(v.order) && v.order[i] == after {
			i++
		}
	}
	end := len(v.order)
	if limit > 0 {
		end = min(end, i+limit)
	}
	out := make([]Skill, 0, end-i)
	for _, id := range v.order[i:end] {
		out = append(out, v.byID[id].skill)
	}
	return out, end < len(v.order), nil
}

// Skill returns the skill at path.
func (v *View) Skill(_ context.Context, p string) (Skill, bool, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	sv, ok := v.byID[p]
	if !ok {
		return Skill{}, false, nil
	}
	return sv.skill, true, nil
}

// ReadFile returns the bytes of one file of the skill at path (shared for
// a synthesized SKILL.md: callers must not modify them).
func (v *View) ReadFile(_ context.Context, p, file string) ([]byte, error) {
	v.mu.RLock()
	sv, ok := v.byID[p]
	v.mu.RUnlock()
	if !ok {
		return nil, ErrNoSuchFile
	}
	if sv.md != nil {
		if file != FileName {
			return nil, ErrNoSuchFile
		}
		return sv.md, nil
	}
	f, ok := sv.entry.File(file)
	if !ok {
		return nil, ErrNoSuchFile
	}
	b, err := f.Content.Bytes()
	if err != nil {
		return nil, fmt.Errorf("read %s of skill %s: %w", file, p, err)
	}
	return b, nil
}

// Watch calls changed with the path of every skill that changes until ctx
// ends.
func (v *View) Watch(ctx context.Context, changed func(string)) error {
	v.wmu.Lock()
	id := v.nextW
	v.nextW++
	v.watchers[id] = changed
	v.wmu.Unlock()
	<-ctx.Done()
	v.wmu.Lock()
	delete(v.watchers, id)
	v.wmu.Unlock()
	return nil
}

// build computes the served form of one entry.
func build(e *catalog.Entry) *view {
	if _, ok := e.File(FileName); ok {
		return buildFolder(e)
	}
	return buildPublished(e)
}

func lastSegment(id string) string { return path.Base(id) }

// buildFolder serves a folder skill's real files and frontmatter.
func buildFolder(e *catalog.Entry) *view {
	s := Skill{Path: e.ID, Files: make([]File, 0, len(e.Files))}
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
	return &view{skill: s, entry: e}
}

// buildPublished synthesizes a SKILL.md for a skill published over iii.
func buildPublished(e *catalog.Entry) *view {
	name := lastSegment(e.ID)
	desc := e.IndexEntry().Description
	if strings.TrimSpace(desc) == "" {
		desc = e.DisplayTitle()
	}
	body, err := e.Body.String()
	if err != nil {
		return &view{entry: e, skill: Skill{Path: e.ID, Name: name, Description: desc, Frontmatter: []byte("{}"),
			Problem: "reading the published body failed: " + err.Error()}}
	}
	fm := yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "name"}, {Kind: yaml.ScalarNode, Value: name},
		{Kind: yaml.ScalarNode, Value: "description"}, {Kind: yaml.ScalarNode, Value: desc},
	}}
	y, _ := yaml.Marshal(&fm)
	var md bytes.Buffer
	md.WriteString("---\n")
	md.Write(y)
	md.WriteString("---\n\n")
	md.WriteString(body)
	fmJSON, _ := json.Marshal(map[string]string{"name": name, "description": desc})
	sum := catalog.DigestOf(md.Bytes())
	s := Skill{Path: e.ID, Name: name, Description: desc, Frontmatter: fmJSON,
		Files:   []File{{Path: FileName, Size: int64(md.Len()), SHA256: hex.EncodeToString(sum[:]), MIME: "text/markdown"}},
		Dynamic: strings.Contains(body, "iii://fn/"),
	}
	if p := checkName(name); p != "" {
		s.Problem = p
	} else {
		s.Problem = checkLimits(e.ID, s.Files)
	}
	return &view{skill: s, entry: e, md: md.Bytes()}
}
