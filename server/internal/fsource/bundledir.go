package fsource

// Skills Protocol bundles (<dir>/skill.toml), completed by a BundleReader.

import (
	"fmt"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// BundleDir is a Skills Protocol bundle found in a folder, handed to a
// BundleReader.
type BundleDir struct {
	// Folder is the absolute folder root; Dir the bundle's folder relative
	// to it ('/'-separated).
	Folder string
	Dir    string
	// Manifest is the raw skill.toml.
	Manifest []byte
}

// BundleReader completes the entry of a bundle: e arrives with ID (the
// bundle's folder path), Files (every file, digests computed), Main and
// Body (SKILL.md when present), Frontmatter, Origin (kind bundle) and
// Modified filled in; the reader parses the manifest and sets what it
// says (Version, Kind, ID, Description, Extra…). An error skips the bundle
// and is listed by Problems.
type BundleReader func(b BundleDir, e *catalog.Entry) error

func (f *folder) loadBundle(o *scanOut, dir string) {
	manifestPath := joinRel(dir, BundleManifest)
	if f.bundle == nil {
		o.problem(manifestPath, msgNoBundleReader)
		return
	}
	manifest, _, err := f.readFile(manifestPath, MaxFileBytes)
	if err != nil {
		o.problem(manifestPath, f.reason(err))
		return
	}
	var fm catalog.Frontmatter
	var body string
	main := joinRel(dir, SkillFile)
	if _, err := f.fsRoot.Load().Stat(main); err == nil {
		var ok bool
		if _, _, fm, body, ok = f.markdown(o, main, false); !ok {
			return
		}
	}
	e, ok := f.skillEntry(o, dir, SkillFile, catalog.OriginBundle, fm, body)
	if !ok {
		return
	}
	e.Origin.Path = manifestPath
	if err := f.bundle(BundleDir{Folder: f.root, Dir: dir, Manifest: manifest}, e); err != nil {
		o.problem(manifestPath, fmt.Sprintf(fmtBundleRejected, err))
		return
	}
	if err := catalog.CheckEntry(e); err != nil {
		o.problem(manifestPath, fmt.Sprintf(fmtBundleRejected, err))
		return
	}
	if f.bundleWarning != nil {
		if msg := f.bundleWarning(e); msg != "" {
			o.warnings = append(o.warnings, [2]string{manifestPath, msg})
		}
	}
	o.add(&unit{kind: unitBundle, path: dir, entry: e})
}
