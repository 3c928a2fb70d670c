package skilladd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillarchive"
)

// Options configure Plan and Add.
type Options struct {
	// Forge is where owner/repo points (DefaultForge when "").
	Forge string
	// Namespace, when set, is put before every id ("team" → "team/pdf").
	Namespace string
	// Only, when set, keeps these ids (as the source names them, before
	// Namespace) and ignores what else the source holds, problems
	// included.
	Only []string
	// SkipFiles registers a skill that has supporting files (scripts/,
	// references/, …) as its SKILL.md alone, listing the files left out;
	// without it such a skill is refused.
	SkipFiles bool
	// Message and Author go with every version; the provenance line is
	// added to Message.
	Message, Author string
	// Git is the git program (default "git"); GitEnv is added to its
	// environment; GitTimeout bounds each fetch and archive download
	// (default 5 minutes); MaxDownload caps a repository's size at depth
	// 1 and an archive download (default 256 MiB).
	Git         string
	GitEnv      []string
	GitTimeout  time.Duration
	MaxDownload int64
	// Limits bound reading archives and repositories
	// (skillarchive.DefaultLimits when zero).
	Limits skillarchive.Limits
	// OwnerWait is how long a register refused because another
	// connection still holds the id is retried (default 5 s: the engine
	// may not yet have seen the previous skills add's connection close).
	OwnerWait time.Duration
	// Signer, when set, signs every body Add registers (SSHSIG, namespace
	// rules.SignatureNamespace), and the signature goes with the register.
	Signer ssh.Signer
}

func (o *Options) gitBinary() string {
	if o.Git == "" {
		return "git"
	}
	return o.Git
}

func (o *Options) gitTimeout() time.Duration {
	if o.GitTimeout <= 0 {
		return 5 * time.Minute
	}
	return o.GitTimeout
}

func (o *Options) maxDownload() int64 {
	if o.MaxDownload <= 0 {
		return 256 << 20
	}
	return o.MaxDownload
}

// readOptions are the archive rules for one source: hidden names and
// editors' temporary files are never read (the server ignores them too).
func (o *Options) readOptions(where, noun string) skillarchive.Options {
	return skillarchive.Options{Where: where, Noun: noun, Limits: o.Limits, Skip: ignoredPath}
}

// ignoredPath reports a path with a component a skills folder ignores.
func ignoredPath(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if fsource.Ignored(c) {
			return true
		}
	}
	return false
}

// Skill is one skill a source gives, ready to register.
type Skill struct {
	// ID is the id it is registered at (Namespace included).
	ID string `json:"id"`
	// Body is what is registered: SKILL.md (or the .md file) without its
	// frontmatter, exactly what skill::fetch serves for the folder skill.
	Body string `json:"-"`
	// SHA256 is the body's digest (hex), as skills::versions lists it.
	SHA256     string     `json:"sha256"`
	Provenance Provenance `json:"provenance"`
	// Message goes with the version: Options.Message, then the
	// provenance line (Provenance.Line).
	Message string `json:"message"`
	// LeftOut lists what the registry cannot store and is not
	// registered: supporting files (with SkipFiles) and frontmatter keys.
	LeftOut []string `json:"left_out,omitempty"`
	// Warnings are the folder rules' caveats (the server serves the skill
	// all the same).
	Warnings []string `json:"warnings,omitempty"`
}

// Planned is what one SOURCE gives.
type Planned struct {
	Source Source  `json:"-"`
	Arg    string  `json:"source"`
	Skills []Skill `json:"skills"`
	// Notes are things found and not added (prompts).
	Notes []string `json:"notes,omitempty"`
}

// PlanError lists every reason a SOURCE is refused.
type PlanError struct {
	Source   string
	Problems []string
	Hint     string
}

func (e *PlanError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: refused, nothing from it is registered:", e.Source)
	for _, p := range e.Problems {
		b.WriteString("\n  " + p)
	}
	if e.Hint != "" {
		b.WriteString("\n  " + e.Hint)
	}
	return b.String()
}

// Plan reads every SOURCE and checks every skill in them against the
// server's rules; it registers nothing. Any refusal is an error: Add
// registers nothing unless the whole plan passed.
func Plan(ctx context.Context, args []string, o Options) ([]Planned, error) {
	var out []Planned
	var errs []string
	ids := map[string]string{} // id → the SOURCE that gives it
	for _, arg := range args {
		src, err := ParseSource(arg, o.Forge)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		p, err := planSource(ctx, src, &o)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, s := range p.Skills {
			if other, dup := ids[s.ID]; dup {
				errs = append(errs, fmt.Sprintf("%s: skill %s is also given by %s: give each id once", arg, s.ID, other))
			}
			ids[s.ID] = arg
		}
		out = append(out, *p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// tree is a source laid out as a skills folder on disk.
type tree struct {
	dir string // the folder to scan
	// single: the source itself was one skill, laid out under dir/name.
	single  string
	prov    Provenance
	cleanup func()
}

func planSource(ctx context.Context, src Source, o *Options) (*Planned, error) {
	t, err := layOut(ctx, src, o)
	if err != nil {
		return nil, &PlanError{Source: src.Arg, Problems: []string{err.Error()}}
	}
	defer t.cleanup()
	return scan(src, t, o)
}

// layOut puts a source where fsource can scan it: a folder of skills as it
// is; a folder that is one skill, an archive and a repository through the
// archive rules into a temporary folder.
func layOut(ctx context.Context, src Source, o *Options) (*tree, error) {
	prov := Provenance{Kind: src.Kind, Source: src.Shown, Ref: src.Ref, Subdir: src.Subdir}
	if src.Path != "" {
		prov.Source = src.Path
	}
	var files []skillarchive.File
	name := src.Name
	switch src.Kind {
	case KindFolder:
		dir := src.Path
		if src.Subdir != "" {
			dir = filepath.Join(dir, filepath.FromSlash(src.Subdir))
			name = path.Base(src.Subdir)
		}
		if !hasSkillFile(dir) {
			return &tree{dir: dir, prov: prov, cleanup: func() {}}, nil
		}
		fs, err := skillarchive.ReadDir(dir, o.readOptions(dir, "folder"))
		if err != nil {
			return nil, err
		}
		files, name = fs, filepath.Base(dir)
	case KindArchive:
		fs, sum, err := readArchive(ctx, src, o)
		if err != nil {
			return nil, err
		}
		prov.SHA256 = sum
		files = fs
		if src.Subdir != "" {
			files = under(files, src.Subdir)
			if len(files) == 0 {
				return nil, fmt.Errorf("%s: the archive has no files under %s", src.Where(), src.Subdir)
			}
			name = path.Base(src.Subdir)
		}
	case KindGit:
		g, err := fetchGit(ctx, src, o)
		if err != nil {
			return nil, err
		}
		prov.Commit = g.commit
		files = g.files
		if src.Subdir != "" {
			name = path.Base(src.Subdir)
		}
	}
	tmp, err := os.MkdirTemp("", "skills-add-")
	if err != nil {
		return nil, err
	}
	t := &tree{dir: tmp, prov: prov, cleanup: func() { os.RemoveAll(tmp) }}
	if rootHasSkillFile(files) {
		// The source is one skill: its folder is named after the source
		// (the folder, the :subdir, the repository or the archive), as
		// the server would see it inside a skills folder.
		t.single = name
		for i := range files {
			files[i].Path = name + "/" + files[i].Path
		}
		if err := checkSingleName(src, name); err != nil {
			t.cleanup()
			return nil, err
		}
	}
	if err := skillarchive.WriteTree(tmp, files); err != nil {
		t.cleanup()
		return nil, err
	}
	return t, nil
}

// checkSingleName refuses a skill folder name the write could not use.
func checkSingleName(src Source, name string) error {
	if clean, err := skillarchive.CleanName(name); err != nil || clean != name || strings.Contains(name, "/") || name == "" {
		return fmt.Errorf("%s: the source is one skill, and %q cannot name its folder", src.Where(), name)
	}
	return nil
}

func hasSkillFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.EqualFold(e.Name(), fsource.SkillFile) })
}

func rootHasSkillFile(files []skillarchive.File) bool {
	return slices.ContainsFunc(files, func(f skillarchive.File) bool { return strings.EqualFold(f.Path, fsource.SkillFile) })
}

// under keeps the files below dir, paths made relative to it.
func under(files []skillarchive.File, dir string) []skillarchive.File {
	var out []skillarchive.File
	for _, f := range files {
		if rest, ok := strings.CutPrefix(f.Path, dir+"/"); ok {
			f.Path = rest
			out = append(out, f)
		}
	}
	return out
}

// readArchive reads an archive file, or downloads one (src.Path ""),
// through the archive rules and returns its files and its sha256.
func readArchive(ctx context.Context, src Source, o *Options) ([]skillarchive.File, string, error) {
	if src.Path == "" {
		b, err := download(ctx, src, o)
		if err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256(b)
		_, files, err := skillarchive.Read(bytes.NewReader(b), int64(len(b)), o.readOptions(src.Shown, "archive"))
		if err != nil {
			return nil, "", err
		}
		return files, hex.EncodeToString(sum[:]), nil
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, "", fmt.Errorf("%s: %w", src.Path, err)
	}
	_, files, err := skillarchive.Read(f, fi.Size(), o.readOptions(src.Path, "archive"))
	if err != nil {
		return nil, "", err
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// bundleRefused keeps Skills Protocol bundles out with a message that
// says how to publish them.
func bundleRefused(fsource.BundleDir, *catalog.Entry) error {
	return fmt.Errorf("skills add registers Agent Skills and markdown skills, not Skills Protocol bundles (skill.toml): publish it with %s, or serve its folder with --sp-bundles", rules.FnPublishBundle)
}

// scan reads the laid-out tree exactly as the server reads a skills
// folder, and turns what it serves into Skills.
func scan(src Source, t *tree, o *Options) (*Planned, error) {
	set, err := fsource.Open(fsource.Options{Folders: []string{t.dir}, Catalog: catalog.New(),
		Logger: slog.New(slog.DiscardHandler), Bundle: bundleRefused})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Where(), err)
	}
	defer set.Close()
	only := map[string]bool{}
	for _, id := range o.Only {
		only[id] = true
	}
	keep := func(id string) bool { return len(only) == 0 || only[id] }
	// inSkill reports whether a problem's path belongs to a kept skill
	// (with Only, problems elsewhere do not count).
	var kept []*catalog.Entry
	for _, e := range set.Skills() {
		if keep(e.ID) {
			kept = append(kept, e)
		}
	}
	problemCounts := func(rel string) bool {
		if len(only) == 0 {
			return true
		}
		for id := range only {
			if rel == id || strings.HasPrefix(rel, id+"/") || strings.TrimSuffix(rel, ".md") == id {
				return true
			}
		}
		return false
	}
	var problems []string
	for _, p := range set.Problems() {
		if p.Path == "" && src.Kind == KindFolder && t.single == "" {
			problems = append(problems, fmt.Sprintf("%s: %s", src.Where(), p.Reason))
			continue
		}
		if problemCounts(p.Path) {
			problems = append(problems, fmt.Sprintf("%s: %s", t.shown(p.Path), p.Reason))
		}
	}
	for id := range only {
		if !slices.ContainsFunc(kept, func(e *catalog.Entry) bool { return e.ID == id }) {
			problems = append(problems, fmt.Sprintf("--only %s: the source serves no skill %s", id, id))
		}
	}
	plan := &Planned{Source: src, Arg: src.Arg}
	warnings := map[string][]string{}
	for _, w := range set.Warnings() {
		warnings[w.Path] = append(warnings[w.Path], w.Reason)
	}
	for _, e := range kept {
		s, errs := t.skill(e, o, warnings)
		problems = append(problems, errs...)
		if len(errs) == 0 {
			plan.Skills = append(plan.Skills, s)
		}
	}
	for _, p := range set.Prompts() {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: prompt %s is not added (skills add registers skills; a worker registers prompts with %s)", t.shown(p.Path), p.Name, rules.FnPromptsRegister))
	}
	if len(problems) > 0 {
		hint := ""
		if t.single == "" && len(o.Only) == 0 {
			hint = "to add part of a source, name its folder (SOURCE:subfolder) or the skills (--only ID,…)"
		}
		return nil, &PlanError{Source: src.Arg, Problems: problems, Hint: hint}
	}
	if len(plan.Skills) == 0 {
		return nil, &PlanError{Source: src.Arg, Problems: []string{"no skill found: expected a folder with a SKILL.md (Agent Skills), a folder of such folders, or markdown skills (docs/folders.md)"}}
	}
	return plan, nil
}

// shown is how a path of the scanned tree is named in messages: from the
// source's root, the :subdir included.
func (t *tree) shown(rel string) string {
	return path.Join(t.prov.Subdir, t.sourcePath(rel))
}

// sourcePath is a scanned path inside the source (below its :subdir).
func (t *tree) sourcePath(rel string) string {
	if t.single != "" {
		if rest, ok := strings.CutPrefix(rel, t.single+"/"); ok {
			return rest
		}
		if rel == t.single {
			return ""
		}
	}
	return rel
}

// skill checks one served entry against the registry's rules and what a
// published skill can hold.
func (t *tree) skill(e *catalog.Entry, o *Options, warnings map[string][]string) (Skill, []string) {
	id := e.ID
	if o.Namespace != "" {
		id = strings.TrimSuffix(o.Namespace, "/") + "/" + e.ID
	}
	where := t.shown(e.Origin.Path)
	body, err := e.Body.String()
	if err != nil {
		return Skill{}, []string{fmt.Sprintf("%s: %v", where, err)}
	}
	if err := registry.ValidateSkillRegistration(id, body); err != nil {
		return Skill{}, []string{fmt.Sprintf("%s: skill %s: %v (%s's rule)", where, id, err, rules.FnSkillsRegister)}
	}
	var leftOut, errs []string
	var extra []string
	for _, f := range e.Files {
		if f.Path != fsource.SkillFile && f.Path != e.Main {
			extra = append(extra, f.Path)
		}
	}
	if len(extra) > 0 {
		if !o.SkipFiles {
			errs = append(errs, fmt.Sprintf("%s: skill %s has %d supporting file(s) (%s): a published skill holds one markdown body (%s stores no files), so they would be lost; give --skip-files to register its SKILL.md alone, or serve the folder with --skills-folder to keep them",
				where, id, len(extra), listSome(extra, 5), rules.FnSkillsRegister))
		}
		for _, f := range extra {
			leftOut = append(leftOut, "file "+f)
		}
	}
	if keys := e.Frontmatter.Fields.Keys(); len(keys) > 0 {
		var dropped []string
		for _, k := range keys {
			if k != "name" {
				dropped = append(dropped, k)
			}
		}
		if len(dropped) > 0 {
			leftOut = append(leftOut, "frontmatter "+strings.Join(dropped, ", ")+" (the description served becomes the body's first paragraph)")
		}
	}
	prov := t.prov
	dir := e.Origin.Path
	if strings.EqualFold(path.Base(dir), fsource.SkillFile) {
		dir = path.Dir(dir)
	}
	prov.Path = path.Join(prov.Subdir, t.sourcePath(dir))
	message := prov.Line()
	if o.Message != "" {
		message = o.Message + "\n\n" + message
	}
	if len(message) > maxMessageBytes {
		errs = append(errs, fmt.Sprintf("%s: skill %s: the version's message (--message and the provenance line) is %d bytes, the registry's limit is %d", where, id, len(message), maxMessageBytes))
	}
	sum := sha256.Sum256([]byte(body))
	s := Skill{ID: id, Body: body, SHA256: hex.EncodeToString(sum[:]), Provenance: prov, Message: message, LeftOut: leftOut}
	for _, w := range warnings[e.Origin.Path] {
		s.Warnings = append(s.Warnings, where+": "+w)
	}
	return s, errs
}

// listSome lists at most n items, then how many more.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
