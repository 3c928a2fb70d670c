package fsource

// The folder type: one configured folder, what it found by path and by
// key, and which unit serves a key. Scanning is split by job: walk.go finds
// things, read.go reads files, skillfile.go / skilldir.go / bundledir.go /
// prompt.go build the entry of each kind, rescan.go plans rescans.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// unitKind is what a scanned path is.
type unitKind int

const (
	unitSkillDir unitKind = iota // <dir>/SKILL.md: an Agent Skills folder
	unitBundle                   // <dir>/skill.toml: a Skills Protocol bundle
	unitFile                     // <path>.md: an iii-directory skill
	unitPrompt                   // */prompts/*.md
)

// unit is one served thing found on disk, keyed by its path (a file, or
// the folder of an Agent Skills skill or bundle).
type unit struct {
	kind   unitKind
	path   string
	entry  *catalog.Entry // skills
	prompt *Prompt        // prompts
}

// folder is one configured skills folder.
type folder struct {
	configured string // as given
	root       string // absolute
	index      int
	jobs       []job // found by the current walk, not loaded yet
	src        *catalog.Source
	bundle     BundleReader
	watch      func(abs string) // adds a watch on a directory

	fsRoot atomic.Pointer[os.Root] // nil while the folder is missing

	units    map[string]*unit   // by path
	byKey    map[string][]*unit // skills by skillKey, prompts by promptKey
	problems map[string]string  // by path ("" for the folder itself)
	// warnings: what is served with a caveat (Agent Skills metadata that
	// is not a map of strings, a bundle's bundleWarning), by path.
	warnings      map[string][]string
	bundleWarning func(*catalog.Entry) string
	exists        bool

	// What the folder serves (the best unit of each key), as applied to
	// the catalog source: skills by id (ascending versions), prompts by
	// name.
	skills  map[string][]*catalog.Entry
	prompts map[string]*Prompt
}

func newFolder(configured, root string, index int, src *catalog.Source, bundle BundleReader, watch func(string)) *folder {
	return &folder{
		configured: configured, root: root, index: index, src: src, bundle: bundle, watch: watch,
		units: map[string]*unit{}, byKey: map[string][]*unit{}, problems: map[string]string{}, warnings: map[string][]string{},
		skills: map[string][]*catalog.Entry{}, prompts: map[string]*Prompt{},
	}
}

func promptKey(name string) string { return "\x00" + name }

// skillKey keys a skill version; several versions of one id (bundles) may
// sit side by side.
func skillKey(id, version string) string { return id + "\x01" + version }

func splitSkillKey(k string) (id, version string) {
	id, version, _ = strings.Cut(k, "\x01")
	return id, version
}

func isPromptKey(k string) bool { return strings.HasPrefix(k, "\x00") }

func mapKey(u *unit) string {
	if u.kind == unitPrompt {
		return promptKey(u.prompt.Name)
	}
	return skillKey(u.entry.ID, u.entry.Version)
}

// within reports whether p is scope or under it ("" is the whole folder).
func within(p, scope string) bool {
	return scope == "" || p == scope || strings.HasPrefix(p, scope+"/")
}

// fsName turns a relative path into an os.Root name ("" is ".").
func fsName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// abs is the absolute path of rel, for messages.
func (f *folder) abs(rel string) string {
	if rel == "" {
		return f.root
	}
	return filepath.Join(f.root, filepath.FromSlash(rel))
}

func (f *folder) problem(rel, reason string) { f.problems[rel] = reason }

func (f *folder) add(u *unit) {
	f.units[u.path] = u
	k := mapKey(u)
	f.byKey[k] = append(f.byKey[k], u)
}

// best is the unit that serves a key within the folder: skill folders and
// bundles before single files, then the lower path. The others are
// reported as duplicates.
func best(us []*unit) *unit {
	if len(us) == 0 {
		return nil
	}
	return slices.MinFunc(us, func(a, b *unit) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.path, b.path)
	})
}
