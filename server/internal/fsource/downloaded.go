package fsource

// Namespaces filled by directory::skills::download: their files are not
// the operator's. The download writes a record into the namespace folder
// before any file; everything served from under that folder is marked
// Downloaded, serves only ids of its namespace, and loses a prompt name
// to the operator's prompt of the same name.

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// DownloadRecord is the file a download writes into each namespace folder
// it fills (<folder>/<namespace>/.iii-download.json): hidden, so never
// served; its presence is what marks the folder's content as downloaded.
const DownloadRecord = ".iii-download.json"

// fmtDownloadedOutside is the problem of downloaded content that declares
// an id outside its namespace folder (a skill.toml naming another team's
// bundle): it could shadow what the operator serves elsewhere.
const fmtDownloadedOutside = "downloaded into %s/, it may only serve ids in namespace %s (%s or %s/…), not %s: a download never takes an id outside the folder it fills"

// downloadNamespace is the namespace folder u lies in when a download
// filled that folder ("" otherwise); known caches the answer per
// namespace for one load.
func (f *folder) downloadNamespace(u *unit, known map[string]bool) string {
	ns, _, inside := strings.Cut(u.path, "/")
	if !inside && (u.kind == unitFile || u.kind == unitPrompt) {
		return "" // a file at the folder's top: in no namespace folder
	}
	has, ok := known[ns]
	if !ok {
		has = f.hasDownloadRecord(ns)
		known[ns] = has
	}
	if !has {
		return ""
	}
	return ns
}

// hasDownloadRecord reports whether <ns>/DownloadRecord is a regular file
// in the folder.
func (f *folder) hasDownloadRecord(ns string) bool {
	r := f.fsRoot.Load()
	if r == nil {
		return false
	}
	fi, err := r.Lstat(ns + "/" + DownloadRecord)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.problem(ns, f.reason(err))
		}
		return false
	}
	return fi.Mode().IsRegular()
}

// markDownloaded marks u as downloaded into namespace ns, or returns why
// it is not served: a skill or bundle whose id lies outside ns.
func markDownloaded(u *unit, ns string) string {
	if u.kind == unitPrompt {
		u.prompt.Downloaded = true
		return ""
	}
	e := u.entry
	if e.ID != ns && !strings.HasPrefix(e.ID, ns+"/") {
		return fmt.Sprintf(fmtDownloadedOutside, ns, ns, ns, ns, quote(e.ID))
	}
	e.Origin.Downloaded = true
	return ""
}

// isDownloadRecord reports whether rel is a namespace folder's download
// record: hidden, yet a change to it rescans the namespace (the operator
// adopts a downloaded folder by removing it).
func isDownloadRecord(rel string) (ns string, ok bool) {
	ns, name, found := strings.Cut(rel, "/")
	return ns, found && name == DownloadRecord && ns != "" && !isIgnored(ns)
}
