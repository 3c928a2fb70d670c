package fsource

// Agent Skills folders (<dir>/SKILL.md) and the file list of any skill
// folder, bundles included.

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// loadSkillDir loads the Agent Skills folder dir, whose skill file on
// disk is named file (SKILL.md, or another letter case of it).
func (f *folder) loadSkillDir(o *scanOut, dir, file string) {
	main := joinRel(dir, file)
	if err := validateFolderName(path.Base(dir)); err != nil {
		o.problem(main, err.Error())
		return
	}
	if err := registry.ValidateID(dir); err != nil {
		o.problem(main, fmt.Sprintf(fmtInvalidID, rules.RustQuote(dir), err))
		return
	}
	_, _, fm, body, ok := f.markdown(o, main, true)
	if !ok {
		return
	}
	warnings, err := ValidateAgentSkill(fm.Fields, path.Base(dir))
	if err != nil {
		o.problem(main, err.Error())
		return
	}
	// An empty body is served: the specification's minimal skill is its
	// frontmatter, and name and description are what a harness reads
	// first (docs/folders.md).
	e, ok := f.skillEntry(o, dir, file, catalog.OriginFolder, fm, body)
	if !ok {
		return
	}
	desc, _ := fm.Fields.String("description")
	e.Description, e.HasDescription = strings.TrimSpace(desc), true
	if file != SkillFile {
		warnings = append([]string{fmt.Sprintf(fmtSkillFileCase, file)}, warnings...)
	}
	for _, w := range warnings {
		o.warnings = append(o.warnings, [2]string{main, w})
	}
	o.add(&unit{kind: unitSkillDir, path: dir, entry: e})
}

// skillEntry builds the entry of a skill folder: every file hashed once,
// contents lazy. file is the skill file's name on disk; it is served as
// SKILL.md, the name every surface (skill://…/SKILL.md, iii://…/SKILL.md)
// uses.
func (f *folder) skillEntry(o *scanOut, dir, file string, kind catalog.OriginKind, fm catalog.Frontmatter, body string) (*catalog.Entry, bool) {
	main := joinRel(dir, file)
	files, err := f.collectFiles(o, dir, file)
	if err != nil {
		o.problem(main, err.Error())
		return nil, false
	}
	e := &catalog.Entry{
		ID:          dir,
		Kind:        catalog.KindInstruction,
		Frontmatter: fm,
		Files:       files,
		Origin:      catalog.Origin{Kind: kind, Source: f.root, Path: main},
	}
	for _, fl := range files {
		if fl.Modified.After(e.Modified) {
			e.Modified = fl.Modified
		}
	}
	if _, ok := e.File(SkillFile); ok {
		e.Main = SkillFile
		// Agent Skills folders may have an empty body; bundles keep the
		// empty-body read error.
		e.Body = catalog.Lazy(int64(len(body)), f.bodyLoader(main, kind == catalog.OriginFolder))
		e.BodyDigest = catalog.DigestOfString(body)
		summary(e, body)
	}
	return e, true
}

// collectFiles lists the files of a skill folder, recursively: hidden and
// temporary files are left out, symlinks that leave the folder are
// reported and left out, folders are watched. The skill file at the top,
// named main on disk, is listed as SKILL.md.
func (f *folder) collectFiles(o *scanOut, dir, main string) ([]catalog.File, error) {
	var files []catalog.File
	var total int64
	var visit func(rel string) error
	visit = func(rel string) error {
		entries, err := fs.ReadDir(f.fsRoot.Load().FS(), rel)
		if err != nil {
			return fmt.Errorf(fmtUnreadable, err)
		}
		f.watch(f.abs(rel))
		for _, de := range entries {
			if isIgnored(de.Name()) {
				continue
			}
			child := rel + "/" + de.Name()
			if why := registry.FileNameProblem(de.Name()); why != "" {
				// Every surface lists files in JSON or a URI: a name
				// they cannot carry is left out, not listed unreadable.
				o.problem(registry.Quoted(child), why+"; the file is left out of the skill")
				continue
			}
			if de.IsDir() {
				if err := visit(child); err != nil {
					return err
				}
				continue
			}
			if de.Type()&fs.ModeSymlink == 0 && !de.Type().IsRegular() {
				continue
			}
			fl, err := f.hashFile(child)
			if err != nil {
				o.problem(child, f.reason(err))
				continue
			}
			fl.Path = strings.TrimPrefix(child, dir+"/")
			if fl.Path == main {
				fl.Path = SkillFile
			}
			files = append(files, fl)
			total += fl.Size
			if len(files) > MaxSkillFiles {
				return fmt.Errorf(fmtTooManyFiles, MaxSkillFiles)
			}
			if total > MaxSkillBytes {
				return fmt.Errorf(fmtSkillTooLarge, MaxSkillBytes)
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b catalog.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// hashFile streams a file through sha256 once; its content stays on disk.
func (f *folder) hashFile(rel string) (catalog.File, error) {
	fh, err := openRead(f.fsRoot.Load(), rel)
	if err != nil {
		return catalog.File{}, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return catalog.File{}, err
	}
	if fi.IsDir() {
		return catalog.File{}, errSymlinkDir
	}
	if !fi.Mode().IsRegular() {
		return catalog.File{}, errNotRegular
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(fh, MaxSkillBytes+1))
	if err != nil {
		return catalog.File{}, err
	}
	var d catalog.Digest
	h.Sum(d[:0])
	return catalog.File{
		Size: n, Digest: d, MIME: catalog.MIMEType(rel), Modified: fi.ModTime(),
		Content: catalog.Lazy(n, f.fileLoader(rel)),
	}, nil
}
