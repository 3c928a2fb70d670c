package skillsprotocol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// Bundle limits (the MCP Skills extension's, so a bundle is servable there too).
const (
	MaxBundleFiles = 512
	MaxBundleBytes = 16 << 20
)

// Bundle files with a fixed meaning.
const (
	ManifestFile     = "skill.toml"
	InstructionsFile = "SKILL.md"
)

// NameToID maps a Skills Protocol name to an iii skill id
// (resend.email.send -> resend/email/send).
func NameToID(name string) string { return strings.ReplaceAll(name, ".", "/") }

// IDToName maps an iii skill id to its Skills Protocol name
// (resend/email/send -> resend.email.send). iii ids never hold dots, so the
// mapping is one-to-one; '-' and '_' of iii ids and Agent Skills names stay.
func IDToName(id string) string { return strings.ReplaceAll(id, "/", ".") }

// BuildEntry validates a bundle (path -> content) and turns it into a
// catalog entry: id = NameToID(manifest name), version and kind from the
// manifest, Extra = *Manifest, frontmatter and body from SKILL.md.
func BuildEntry(files map[string][]byte, origin catalog.Origin, modified time.Time) (*catalog.Entry, error) {
	if len(files) > MaxBundleFiles {
		return nil, fmt.Errorf("bundle has %d files (at most %d)", len(files), MaxBundleFiles)
	}
	var total int64
	paths := make([]string, 0, len(files))
	for p, b := range files {
		if err := checkRelPath(p); err != nil {
			return nil, fmt.Errorf("bundle file: %w", err)
		}
		total += int64(len(b))
		paths = append(paths, p)
	}
	if total > MaxBundleBytes {
		return nil, fmt.Errorf("bundle holds %d bytes (at most %d)", total, MaxBundleBytes)
	}
	raw, ok := files[ManifestFile]
	if !ok {
		return nil, errors.New("bundle has no skill.toml at its root")
	}
	sort.Strings(paths)
	list := make([]catalog.File, 0, len(paths))
	for _, p := range paths {
		list = append(list, catalog.NewFile(p, files[p], modified, nil))
	}
	md, hasMD := files[InstructionsFile]
	return buildEntry(list, raw, md, hasMD, origin, modified)
}

// buildEntry is a bundle's entry from its files (content in memory or
// loaded on demand), its skill.toml and its SKILL.md (when hasMD).
func buildEntry(files []catalog.File, manifest, md []byte, hasMD bool, origin catalog.Origin, modified time.Time) (*catalog.Entry, error) {
	e := &catalog.Entry{Origin: origin, Modified: modified, Files: files}
	body := ""
	if hasMD {
		yamlText, rest, has := catalog.SplitFrontmatter(string(md))
		body = string(md)
		e.Main = InstructionsFile
		if has {
			fm, err := catalog.ParseFrontmatter(yamlText)
			if err != nil {
				return nil, fmt.Errorf("SKILL.md frontmatter: %w", err)
			}
			e.Frontmatter = fm
			body = rest
		}
	}
	e.Body = catalog.Inline(body)
	e.BodyDigest = catalog.DigestOfString(body)
	if err := CompleteEntry(manifest, e); err != nil {
		return nil, err
	}
	return e, nil
}

// CompleteEntry fills a bundle's catalog entry from its skill.toml: e
// arrives with Files (and Body/Frontmatter from SKILL.md) set by the
// source; CompleteEntry validates the manifest and sets ID
// (NameToID(name)), Version, Kind, Extra (*Manifest) and the summary. It
// is the fsource.BundleReader of skills folders as well.
func CompleteEntry(manifest []byte, e *catalog.Entry) error {
	m, err := ParseManifest(manifest)
	if err != nil {
		return err
	}
	if dir, ok := bundleFolder(e.Origin); ok {
		// A skills folder (fsource) follows a symlink that stays inside
		// the folder and drops one that escapes; a bundle is held to the
		// --sp-bundles rule instead: regular files only, else refused.
		if err := checkNoSymlinks(dir); err != nil {
			return err
		}
	}
	if m.Kind == KindAction {
		if _, ok := e.File(m.Runtime.Entrypoint); !ok {
			return fmt.Errorf("runtime.entrypoint %q is not a file of the bundle", m.Runtime.Entrypoint)
		}
	}
	e.ID, e.Version, e.Kind, e.Extra = NameToID(m.Name), m.Version, catalog.Kind(m.Kind), &m
	if body, err := e.Body.String(); err == nil {
		e.SetSummary(body)
	}
	return catalog.CheckEntry(e)
}

// bundleFolder is the folder on disk a bundle entry was read from: Origin
// Source is an absolute folder root and Path its skill.toml (fsource:
// "<dir>/skill.toml", LoadBundleDir: "skill.toml"). Published bundles
// have no folder.
func bundleFolder(o catalog.Origin) (string, bool) {
	if o.Kind != catalog.OriginBundle || !filepath.IsAbs(o.Source) || path.Base(o.Path) != ManifestFile {
		return "", false
	}
	return filepath.Join(o.Source, filepath.FromSlash(path.Dir(o.Path))), true
}

// checkNoSymlinks refuses a bundle folder holding a symlink, with the
// walk of LoadBundleDir (hidden folders are not entered).
func checkNoSymlinks(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink (bundles hold regular files only)", filepath.ToSlash(rel))
		case d.IsDir() && rel != "." && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		}
		return nil
	})
}

// LoadBundleDir reads one bundle folder. Only regular files and folders
// are allowed: a symlink anywhere is an error, so a bundle can never point
// outside itself (the sandbox copies bundle files, it never follows links).
func LoadBundleDir(dir string) (*catalog.Entry, error) {
	files := map[string][]byte{}
	var newest time.Time
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink (bundles hold regular files only)", rel)
		case d.IsDir():
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		case strings.HasPrefix(d.Name(), "."):
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > MaxBundleBytes || len(files) >= MaxBundleFiles {
			return fmt.Errorf("bundle is larger than %d files or %d bytes", MaxBundleFiles, MaxBundleBytes)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = b
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	abs, _ := filepath.Abs(dir)
	e, err := BuildEntry(files, catalog.Origin{Kind: catalog.OriginBundle, Source: abs, Path: ManifestFile}, newest)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	return e, nil
}

// LoadBundles finds every folder under root that holds a skill.toml
// (without looking inside a bundle for more) and loads it. Bad bundles
// are reported in errs and skipped; the others load.
func LoadBundles(root string) (entries []*catalog.Entry, errs []error) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Lstat(filepath.Join(p, ManifestFile)); err != nil {
			return nil
		}
		e, err := LoadBundleDir(p)
		if err != nil {
			errs = append(errs, err)
		} else {
			entries = append(entries, e)
		}
		return filepath.SkipDir
	})
	if err != nil {
		errs = append(errs, err)
	}
	return entries, errs
}
