// Package skillcheck checks skills before they are served, without a
// server: folders of skills (with the server's own folder rules, through
// fsource: Agent Skills frontmatter, iii id rules, size caps, frontmatter
// YAML, skill.toml manifests through skillsprotocol) and published-skill
// source files (skills::register payloads and markdown bodies, with the
// registry's validators). On top of what the server refuses, it follows
// every link of every served markdown file: relative links should name
// files that exist (a warning, an error with Options.Strict: the server
// serves the skill either way), iii:// links must name skills in the
// checked set (or on a server, through Options.Remote), and section URIs
// must stay out of the hidden namespaces. Ids served by more than one folder are reported with the
// folder that wins.
//
// It is the engine of `skills check`; the command formats Report.
package skillcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// Severities of a Finding.
const (
	Error   = "error"
	Warning = "warning"
)

// Finding is one problem at a place in a file.
type Finding struct {
	Severity string `json:"severity"`
	// File is the path as reported (relative to Options.Dir when inside
	// it); Line is 1-based, 0 when the finding is about the whole file or
	// folder.
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	// Rule names the check: folder (the server's folder rules), register
	// (skills::register rules), agent-skills (what the Agent Skills
	// specification says about a folder the server serves all the same:
	// keys outside it, an empty body), link, iii-link, section, duplicate,
	// input.
	Rule string `json:"rule"`
}

// Report is the outcome of Check.
type Report struct {
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	// Skills and Prompts count what the server would serve; Files the
	// markdown files whose links were followed.
	Skills  int `json:"skills"`
	Prompts int `json:"prompts"`
	Files   int `json:"files"`
}

// Remote answers for ids that are not in the checked set (skills check
// --url asks a running registry).
type Remote interface {
	// HasSkill reports whether the registry serves iii://id.
	HasSkill(ctx context.Context, id string) (bool, error)
	// HasFunction reports whether the engine has function id (a section).
	HasFunction(ctx context.Context, id string) (bool, error)
}

// Options configure Check.
type Options struct {
	// Paths are folders of skills (in precedence order, the earlier wins,
	// like --skills-folder) and files: *.json holds a skills::register
	// payload or a list of them, *.md a skill body a worker publishes
	// (its id is the file name without .md).
	Paths []string
	// Dir is where relative paths are resolved and reported from; empty:
	// the working directory.
	Dir string
	// Remote, when set, resolves iii:// links outside the checked set.
	Remote Remote
	// Strict reports relative links to files that do not exist as errors
	// (else warnings: the server serves the skill either way).
	Strict bool
}

// checker gathers findings and what the checked set serves.
type checker struct {
	opts     Options
	ctx      context.Context
	findings []Finding
	ids      map[string]bool   // skill ids of the checked set
	docs     []doc             // markdown whose links are followed
	remote   map[string]answer // answers of Remote, by "skill:" / "fn:" key
	// focus maps a folder that was added because a PATH is one skill (it
	// holds SKILL.md or skill.toml itself) to those skills: only their
	// findings are reported.
	focus map[string][]string
}

// doc is one markdown file to follow links in.
type doc struct {
	file string // absolute
	text string
	// skillDir is the absolute folder of the skill it belongs to ("" for
	// single-file skills and published bodies): relative links should
	// stay inside it.
	skillDir string
	id       string
	// atLine, when set, is the line every finding of the doc is reported
	// at (a body inside a JSON payload).
	atLine int
}

// Check runs every check on opts.Paths.
func Check(ctx context.Context, opts Options) (Report, error) {
	if opts.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Report{}, err
		}
		opts.Dir = wd
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return Report{}, err
	}
	opts.Dir = dir
	if len(opts.Paths) == 0 {
		return Report{}, fmt.Errorf("no path to check (give folders of skills or skill files)")
	}
	c := &checker{opts: opts, ctx: ctx, ids: map[string]bool{}, remote: map[string]answer{}, focus: map[string][]string{}}
	var folders, files []string
	for _, p := range opts.Paths {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(opts.Dir, p)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			c.add(Error, abs, 0, "input", fmt.Sprintf("cannot check %s: %v", p, err))
		case fi.IsDir() && isSkillDir(abs):
			// One skill: the server serves it from the folder holding it.
			parent := filepath.Dir(filepath.Clean(abs))
			if _, seen := c.focus[parent]; !seen {
				folders = append(folders, parent)
			}
			c.focus[parent] = append(c.focus[parent], filepath.Clean(abs))
		case fi.IsDir():
			folders = append(folders, abs)
		default:
			files = append(files, abs)
		}
	}
	var rep Report
	if len(folders) > 0 {
		s, p, err := c.checkFolders(folders)
		if err != nil {
			return Report{}, err
		}
		rep.Skills, rep.Prompts = s, p
	}
	for _, f := range files {
		rep.Skills += c.checkFile(f)
	}
	for _, d := range c.docs {
		c.checkLinks(d)
	}
	rep.Files = len(c.docs)
	slices.SortStableFunc(c.findings, func(a, b Finding) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
	rep.Findings = c.findings
	for _, f := range c.findings {
		if f.Severity == Error {
			rep.Errors++
		} else {
			rep.Warnings++
		}
	}
	return rep, nil
}

// add records a finding; file is absolute.
func (c *checker) add(sev, file string, line int, rule, msg string) {
	c.findings = append(c.findings, Finding{Severity: sev, File: c.rel(file), Line: line, Rule: rule, Message: msg})
}

// rel shows file relative to Dir when it is inside it.
func (c *checker) rel(file string) string {
	if r, err := filepath.Rel(c.opts.Dir, file); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return r
	}
	return file
}

// checkFolders scans the folders exactly as the server does and reports
// what it would not serve, then collects the served markdown.
func (c *checker) checkFolders(folders []string) (skills, prompts int, err error) {
	cat := catalog.New()
	set, err := fsource.Open(fsource.Options{
		Folders: folders, Catalog: cat, Logger: slog.New(slog.DiscardHandler),
		Bundle: func(b fsource.BundleDir, e *catalog.Entry) error { return skillsprotocol.CompleteEntry(b.Manifest, e) },
	})
	if err != nil {
		return 0, 0, err
	}
	defer set.Close()
	for _, p := range set.Problems() {
		if !c.keep(p.Folder, p.File) {
			continue
		}
		line := 0
		if p.Path != "" {
			line = problemLine(p.File, p.Reason)
		}
		c.add(Error, p.File, line, "folder", p.Reason)
	}
	// Served all the same (metadata that is not a map of strings): the
	// server lists these under diagnostics warnings.
	for _, p := range set.Warnings() {
		if c.keep(p.Folder, p.File) {
			c.add(Warning, p.File, problemLine(p.File, p.Reason), "folder", p.Reason)
		}
	}
	// The catalog decides precedence for the server; ask it who wins.
	shadowed := cat.Shadowed()
	for _, sh := range shadowed {
		win, _ := cat.Get(sh.ID)
		winFile := filepath.Join(win.Origin.Source, filepath.FromSlash(win.Origin.Path))
		for _, e := range sh.Entries {
			file := filepath.Join(e.Origin.Source, filepath.FromSlash(e.Origin.Path))
			if !c.keep(e.Origin.Source, file) {
				continue
			}
			c.add(Warning, file, 0, "duplicate",
				fmt.Sprintf("skill id %s is also served by %s, which wins (earlier folder): this copy is hidden", sh.ID, c.rel(winFile)))
		}
	}
	for _, e := range set.Skills() {
		c.ids[e.ID] = true
		if c.keep(e.Origin.Source, filepath.Join(e.Origin.Source, filepath.FromSlash(e.Origin.Path))) {
			skills++
			c.collect(e.ID, e.Origin.Source, e.Origin.Path)
			c.checkAgentSkill(e)
		}
	}
	for _, sh := range shadowed {
		for _, e := range sh.Entries {
			c.collect(sh.ID, e.Origin.Source, e.Origin.Path)
			c.checkAgentSkill(e)
		}
	}
	for _, p := range set.Prompts() {
		if !c.keep(p.Folder, filepath.Join(p.Folder, filepath.FromSlash(p.Path))) {
			continue
		}
		prompts++
		c.addDoc(filepath.Join(p.Folder, filepath.FromSlash(p.Path)), "", "")
	}
	return skills, prompts, nil
}

// collect queues the markdown of one folder skill: the file of a
// single-file skill, every .md of a skill folder or bundle.
func (c *checker) collect(id, root, main string) {
	abs := filepath.Join(root, filepath.FromSlash(main))
	if !c.keep(root, abs) {
		return
	}
	base := path.Base(main)
	if !strings.EqualFold(base, fsource.SkillFile) && base != fsource.BundleManifest {
		c.addDoc(abs, "", id)
		return
	}
	dir := filepath.Dir(abs)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && d.Type().IsRegular() && strings.EqualFold(filepath.Ext(p), ".md") {
			c.addDoc(p, dir, id)
		}
		return nil
	})
}

// isSkillDir reports a folder that is one skill: SKILL.md (in any letter
// case, as the server reads it) or skill.toml directly inside.
func isSkillDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); strings.EqualFold(n, fsource.SkillFile) || n == fsource.BundleManifest {
			if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
				return true
			}
		}
	}
	return false
}

// keep reports whether a finding about file in folder is reported: always,
// unless the folder was added for single skills and file is outside them.
func (c *checker) keep(folder, file string) bool {
	dirs, ok := c.focus[folder]
	if !ok {
		return true
	}
	for _, d := range dirs {
		if within(file, d) {
			return true
		}
	}
	return false
}

func (c *checker) addDoc(file, skillDir, id string) {
	b, err := os.ReadFile(file)
	if err != nil {
		c.add(Error, file, 0, "input", fmt.Sprintf("unreadable: %v", err))
		return
	}
	c.docs = append(c.docs, doc{file: file, text: string(b), skillDir: skillDir, id: id})
}

// checkFile checks a published-skill source file and returns how many
// skills it holds.
func (c *checker) checkFile(file string) int {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return c.checkPayloads(file)
	case ".md":
		b, err := os.ReadFile(file)
		if err != nil {
			c.add(Error, file, 0, "input", fmt.Sprintf("unreadable: %v", err))
			return 0
		}
		id := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if strings.EqualFold(filepath.Base(file), fsource.SkillFile) {
			id = filepath.Base(filepath.Dir(file))
		}
		return c.checkPublished(file, id, string(b), 0)
	}
	c.add(Error, file, 0, "input", "not a skill file: give a folder of skills, a .md skill body or a .json "+rules.FnSkillsRegister+" payload")
	return 0
}

// checkPayloads reads a skills::register payload, or a JSON list of them.
func (c *checker) checkPayloads(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		c.add(Error, file, 0, "input", fmt.Sprintf("unreadable: %v", err))
		return 0
	}
	var list []json.RawMessage
	if err := json.Unmarshal(b, &list); err != nil {
		list = []json.RawMessage{b}
	}
	n := 0
	for i, raw := range list {
		in, err := registry.DecodeRegisterSkillInput(raw)
		if err != nil {
			c.add(Error, file, lineOfOffset(string(b), offsetOfItem(b, i)), "register", err.Error())
			continue
		}
		n += c.checkPublished(file, in.ID, in.Skill, lineOfOffset(string(b), offsetOfItem(b, i)))
	}
	return n
}

// checkPublished applies the skills::register rules to one body and queues
// it for the link checks.
func (c *checker) checkPublished(file, id, body string, line int) int {
	if err := registry.ValidateSkillRegistration(id, body); err != nil {
		c.add(Error, file, max(line, 1), "register", fmt.Sprintf("skill %s: %v", id, err))
		return 0
	}
	if yamlText, _, ok := catalog.SplitFrontmatter(body); ok {
		if _, err := catalog.ParseFrontmatter(yamlText); err != nil {
			// The registry stores a published body as it is, so this is
			// no refusal; a harness that reads the frontmatter fails.
			c.add(Warning, file, max(line, 1)+yamlLine(err.Error()), "register", fmt.Sprintf("skill %s: %v", id, err))
		}
	}
	c.ids[id] = true
	// A body inside JSON has no file lines of its own: its links are
	// reported at the payload's line.
	c.docs = append(c.docs, doc{file: file, text: body, id: id, atLine: line})
	return 1
}

// offsetOfItem is the byte offset of the i-th element of a top-level JSON
// array (0 when b is not one).
func offsetOfItem(b []byte, i int) int {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return 0
	}
	for k := 0; dec.More(); k++ {
		off := int(dec.InputOffset())
		if k == i {
			// Skip the separator and spaces before the element.
			for off < len(b) && (b[off] == ',' || b[off] == ' ' || b[off] == '\n' || b[off] == '\t' || b[off] == '\r') {
				off++
			}
			return off
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return 0
}

func lineOfOffset(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return strings.Count(s[:off], "\n") + 1
}
