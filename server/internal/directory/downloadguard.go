package directory

// What a download may write: a namespace folder of the first skills
// folder that is new, or that an earlier download filled (its download
// record says so), and there only files that are still as a download
// left them. The operator's folders and files are never overwritten, and
// a namespace the operator serves from any folder is never taken.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/fsource"
)

// downloadRecord is <namespace>/.iii-download.json (fsource.DownloadRecord):
// where the namespace came from and, for every file a download wrote, the
// sha256 digests a later download may overwrite (one; two while a
// download is under way, so a download cut short does not lock the
// namespace).
type downloadRecord struct {
	Namespace string              `json:"namespace"`
	Source    map[string]any      `json:"source"`
	Files     map[string][]string `json:"files"`
}

// plannedFile is a file a download is about to write, relative to its
// namespace folder, with its content (registry) or the clone's file
// (git).
type plannedFile struct {
	rel     string
	content []byte
	src     string
	digest  string
}

func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func sha256OfFile(r fs.FS, name string) (string, error) {
	f, err := r.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// forbidden answers a download that would take what the operator put in
// the skills folder, with code FORBIDDEN.
func forbidden(msg string) error {
	return &iii.InvocationError{Code: rules.CodeForbidden, Message: msg}
}

// operatorFolderEntry reports whether e is served from a folder the
// operator configured (a skills folder or a bundle folder: their Origin
// Source is the folder's absolute path) and not written by a download.
func operatorFolderEntry(e *catalog.Entry) bool {
	return (e.Origin.Kind == catalog.OriginFolder || e.Origin.Kind == catalog.OriginBundle) &&
		filepath.IsAbs(e.Origin.Source) && !e.Origin.Downloaded
}

// operatorServes names a skill in namespace ns that the operator serves
// from a folder (any configured folder, bundle folders included), if any:
// a download there would shadow it or be shadowed by it.
func (d *Directory) operatorServes(ns string) (string, bool) {
	if d.cat == nil {
		return "", false
	}
	list := d.cat.List() // sorted by id: ns, ns-…, ns/… are contiguous
	for i := sort.Search(len(list), func(i int) bool { return list[i].ID >= ns }); i < len(list) && strings.HasPrefix(list[i].ID, ns); i++ {
		id := list[i].ID
		if id != ns && id[len(ns)] != '/' {
			continue
		}
		if slices.ContainsFunc(d.cat.Holders(id), operatorFolderEntry) {
			return id, true
		}
	}
	return "", false
}

// writeNamespace writes planned into <root>/<ns>/ when the namespace is
// the download's to write (see the file comment), the record first so
// the folder watcher never sees the files as the operator's.
func (d *Directory) writeNamespace(r *os.Root, root, ns string, planned []plannedFile, source map[string]any) error {
	if id, ok := d.operatorServes(ns); ok {
		return forbidden(fmt.Sprintf("download refused: the operator serves %s from a skills or bundle folder, in namespace %s: a download never takes a namespace the operator serves (download under another name, or remove the operator's skills from %s first)",
			rules.RustQuote(id), rules.RustQuote(ns), rules.RustQuote(ns)))
	}
	rec, err := d.readRecord(r, root, ns)
	if err != nil {
		return err
	}
	for _, p := range planned {
		if p.rel == fsource.DownloadRecord {
			return invalidArguments(fmt.Errorf(fmtInvalidSkillPath, rules.RustQuote(p.rel), "path is the download record's name"))
		}
		name := ns + "/" + p.rel
		fi, err := r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("download: check %s: %w", filepath.Join(root, name), err)
		}
		if !fi.Mode().IsRegular() {
			return forbidden(fmt.Sprintf("download refused: %s/%s is not a file a download wrote (a %s): a download never overwrites it", ns, p.rel, fi.Mode().Type()))
		}
		have, err := sha256OfFile(r.FS(), name)
		if err != nil {
			return fmt.Errorf("download: read %s: %w", filepath.Join(root, name), err)
		}
		if !slices.Contains(rec.Files[p.rel], have) {
			return forbidden(fmt.Sprintf("download refused: %s/%s was changed or added after the last download of %s (by the operator): a download never overwrites it (move it away to download again)", ns, p.rel, ns))
		}
	}
	// Record first, accepting both the old and the new content of each
	// file: a watcher rescan meanwhile serves them as downloaded, and a
	// download cut short can be repeated.
	next := downloadRecord{Namespace: ns, Source: source, Files: map[string][]string{}}
	for rel, ds := range rec.Files {
		next.Files[rel] = slices.Clone(ds)
	}
	for _, p := range planned {
		if !slices.Contains(next.Files[p.rel], p.digest) {
			next.Files[p.rel] = append(next.Files[p.rel], p.digest)
		}
	}
	if err := writeRecord(r, ns, next); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(root, ns, fsource.DownloadRecord), err)
	}
	for _, p := range planned {
		content := p.content
		if p.src != "" {
			if content, err = os.ReadFile(p.src); err != nil {
				return err
			}
			if sha256Of(content) != p.digest {
				return fmt.Errorf("download: %s changed in the clone while it was copied", p.rel)
			}
		}
		if err := writeFile(r, ns+"/"+p.rel, content); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(root, ns, p.rel), err)
		}
	}
	for _, p := range planned {
		next.Files[p.rel] = []string{p.digest}
	}
	if err := writeRecord(r, ns, next); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(root, ns, fsource.DownloadRecord), err)
	}
	return nil
}

// readRecord is the download record of namespace ns: empty when the
// namespace folder does not exist yet, refused when the folder exists
// without one (the operator's).
func (d *Directory) readRecord(r *os.Root, root, ns string) (downloadRecord, error) {
	rec := downloadRecord{Files: map[string][]string{}}
	fi, err := r.Lstat(ns)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rec, nil
	case err != nil:
		return rec, fmt.Errorf("download: check %s: %w", filepath.Join(root, ns), err)
	case !fi.IsDir():
		return rec, forbidden(fmt.Sprintf("download refused: the skills folder already has %s, which is not a folder a download made: a download never overwrites it", rules.RustQuote(ns)))
	}
	raw, err := r.ReadFile(ns + "/" + fsource.DownloadRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, forbidden(fmt.Sprintf("download refused: the skills folder already has %s/, which no download made (it has no %s): it is the operator's, and a download never writes into it (download under another name, or move the folder away)",
			ns, fsource.DownloadRecord))
	}
	if err != nil {
		return rec, fmt.Errorf("download: read %s: %w", filepath.Join(root, ns, fsource.DownloadRecord), err)
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Files == nil {
		return rec, forbidden(fmt.Sprintf("download refused: %s/%s is not a download record (%v): the folder is treated as the operator's", ns, fsource.DownloadRecord, err))
	}
	return rec, nil
}

func writeRecord(r *os.Root, ns string, rec downloadRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(r, ns+"/"+fsource.DownloadRecord, append(b, '\n'))
}
