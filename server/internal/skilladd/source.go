package skilladd

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/skillarchive"
)

// Kind is what a SOURCE is.
type Kind string

// Kinds of Source.
const (
	KindFolder  Kind = "folder"
	KindArchive Kind = "archive"
	KindGit     Kind = "git"
)

// DefaultForge is where owner/repo shorthands point.
const DefaultForge = "https://github.com/"

// Source is one SOURCE argument, parsed.
type Source struct {
	// Arg is the argument as given, without the password or token an
	// http(s) URL may carry: what messages and reports show.
	Arg  string
	Kind Kind
	// Path is the local folder, archive or repository (absolute), "" for a
	// remote repository.
	Path string
	// URL is the repository as git is given it (credentials included);
	// Shown is the same without credentials, for messages and provenance.
	URL   string
	Shown string
	// Ref is the #ref asked ("" for the default branch), Subdir the
	// :subdir ("" for the root).
	Ref    string
	Subdir string
	// Name is the repository's or archive's name without its extension:
	// the name of a skill that sits at its root.
	Name string
}

// Where is how messages name the source.
func (s Source) Where() string {
	w := s.Shown
	if s.Path != "" {
		w = s.Path
	}
	if s.Ref != "" {
		w += "#" + s.Ref
	}
	if s.Subdir != "" {
		w += ":" + s.Subdir
	}
	return w
}

var (
	shorthand = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$`)
	scpLike   = regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:`)
	transport = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)
	hexSHA    = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

// ParseSource reads one SOURCE: an existing folder or archive (the whole
// argument, or before a :subdir or #ref suffix), an archive to download
// (an http(s) URL whose path ends in .zip, .tar.gz, .tgz or .tar), a git
// URL (https://, http://, ssh://, git:// or git@host:owner/repo) or
// owner/repo for forge (DefaultForge when ""), each with optional #ref
// (not for archives) and :subdir.
func ParseSource(raw, forge string) (Source, error) {
	arg := redact(raw)
	if i := strings.IndexByte(arg, '?'); i >= 0 && isArchiveURL(raw) {
		arg = arg[:i] + "?…" // a signed download URL's query is a credential
	}
	src := Source{Arg: arg}
	switch {
	case raw == "":
		return src, errors.New("an empty SOURCE: give a folder, an archive (.zip, .tar.gz) or a git repository")
	case strings.HasPrefix(raw, "-"):
		return src, fmt.Errorf("SOURCE %q starts with '-': refused so that git never reads it as an option (write ./%s for a local file)", arg, arg)
	case !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return src, fmt.Errorf("SOURCE %q holds a control character or invalid UTF-8", arg)
	case strings.HasPrefix(strings.ToLower(raw), "file:"):
		return src, fmt.Errorf("SOURCE %q: file:// URLs are refused (git would also follow them from a hostile repository's submodules); give the repository's local path instead (/path/to/repo#ref to clone a local repository)", arg)
	}
	if fi, err := os.Stat(raw); err == nil {
		return local(src, raw, fi, "", "")
	}
	if isArchiveURL(raw) {
		// Whole, before any ':' of a :subdir is looked for: a download
		// path may hold one (…/pdf@sha256:<hex>.zip).
		return remote(src, raw, raw[:strings.Index(raw, "://")], "", "")
	}
	if m := transport.FindString(raw); m != "" {
		return src, fmt.Errorf("SOURCE %q: the git transport %q is refused (a remote helper runs a program); expected https://, http://, ssh://, git:// or git@host:owner/repo", arg, m)
	}
	loc, ref, sub := splitSuffixes(raw)
	if err := checkRef(ref); err != nil {
		return src, fmt.Errorf("SOURCE %q: %w", arg, err)
	}
	if sub != "" {
		clean, err := skillarchive.CleanName(sub)
		if err != nil || clean == "" {
			return src, fmt.Errorf("SOURCE %q: subfolder %q: %v (expected a path inside the source, such as skills/pdf)", arg, sub, orEmpty(err))
		}
		sub = clean
	}
	if i := strings.Index(loc, "://"); i > 0 {
		return remote(src, loc, loc[:i], ref, sub)
	}
	if scpLike.MatchString(loc) {
		return remote(src, loc, "scp", ref, sub)
	}
	if fi, err := os.Stat(loc); err == nil {
		return local(src, loc, fi, ref, sub)
	}
	if shorthand.MatchString(loc) && !strings.Contains(loc, "..") {
		if forge == "" {
			forge = DefaultForge
		}
		base := forge
		if !strings.HasSuffix(base, "/") && !strings.HasSuffix(base, ":") {
			base += "/"
		}
		full := base + loc
		scheme := "scp"
		if i := strings.Index(full, "://"); i > 0 {
			scheme = full[:i]
		} else if !scpLike.MatchString(full) {
			return src, fmt.Errorf("forge %q: expected a URL such as https://github.com/ or git@github.com: (owner/repo is added to it)", forge)
		}
		return remote(src, full, scheme, ref, sub)
	}
	return src, fmt.Errorf("SOURCE %q is no existing folder or archive, no git URL (https://…, ssh://…, git@host:owner/repo) and no owner/repo shorthand", arg)
}

// redact removes the userinfo of an http(s) URL and the password of any
// other: a token given in a SOURCE is used for the fetch, never shown.
func redact(arg string) string {
	i := strings.Index(arg, "://")
	if i < 0 {
		return arg
	}
	rest := arg[i+3:]
	at := strings.IndexByte(rest, '@')
	if slash := strings.IndexByte(rest, '/'); at < 0 || slash >= 0 && at > slash {
		return arg
	}
	user := rest[:at]
	switch strings.ToLower(arg[:i]) {
	case "http", "https":
		user = ""
	default:
		user, _, _ = strings.Cut(user, ":")
		user += "@"
	}
	return arg[:i+3] + user + rest[at+1:]
}

func orEmpty(err error) error {
	if err == nil {
		return errors.New("empty")
	}
	return err
}

// splitSuffixes cuts #ref and :subdir off a SOURCE: "loc#ref:sub",
// "loc#ref", "loc:sub". The ':' of a subfolder comes after the path has
// started: after "scheme://host[:port]/", after the ':' of
// user@host:path, anywhere in owner/repo or a local path.
func splitSuffixes(arg string) (loc, ref, sub string) {
	if i := strings.IndexByte(arg, '#'); i >= 0 {
		loc, ref = arg[:i], arg[i+1:]
		ref, sub, _ = strings.Cut(ref, ":")
		return loc, ref, sub
	}
	start := 0
	switch {
	case strings.Contains(arg, "://"):
		i := strings.Index(arg, "://") + 3
		slash := strings.IndexByte(arg[i:], '/')
		if slash < 0 {
			return arg, "", ""
		}
		start = i + slash
	case scpLike.MatchString(arg):
		start = strings.IndexByte(arg, ':') + 1
	}
	if j := strings.IndexByte(arg[start:], ':'); j >= 0 {
		return arg[:start+j], "", arg[start+j+1:]
	}
	return arg, "", ""
}

// checkRef applies git's refname rules (git check-ref-format) and ours:
// nothing git could read as an option.
func checkRef(ref string) error {
	switch {
	case ref == "" || hexSHA.MatchString(ref):
		return nil
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("ref %q starts with '-': refused so that git never reads it as an option (such as --upload-pack=…)", ref)
	case len(ref) > 255:
		return fmt.Errorf("ref of %d bytes; git refs are at most 255", len(ref))
	case strings.ContainsAny(ref, " ~^:?*[\\\x7f"), strings.Contains(ref, ".."), strings.Contains(ref, "@{"), strings.Contains(ref, "//"),
		strings.HasSuffix(ref, "/"), strings.HasSuffix(ref, "."), strings.HasSuffix(ref, ".lock"), strings.HasPrefix(ref, "/"), ref == "@",
		strings.Contains(ref, "/."), strings.HasPrefix(ref, "."):
		return fmt.Errorf("ref %q is not a valid git ref name (no spaces, '~', '^', ':', '?', '*', '[', '\\', \"..\", \"@{\", \"//\", no leading '.' or '/', no trailing '/', '.' or \".lock\")", ref)
	}
	for _, r := range ref {
		if r < 0x20 {
			return fmt.Errorf("ref %q holds a control character", ref)
		}
	}
	return nil
}

// local makes a folder, archive or local repository source.
func local(src Source, p string, fi os.FileInfo, ref, sub string) (Source, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return src, err
	}
	src.Path, src.Ref, src.Subdir = abs, ref, sub
	src.Name = strings.TrimSuffix(filepath.Base(abs), ".git")
	switch {
	case ref != "":
		if !fi.IsDir() {
			return src, fmt.Errorf("SOURCE %q: #%s asks for a git ref, but %s is a file, not a repository", src.Arg, ref, abs)
		}
		if !isGitRepo(abs) {
			return src, fmt.Errorf("SOURCE %q: #%s asks for a git ref, but %s is not a git repository (no .git, no HEAD)", src.Arg, ref, abs)
		}
		src.Kind, src.URL, src.Shown = KindGit, abs, abs
	case fi.IsDir():
		src.Kind = KindFolder
	case fi.Mode().IsRegular() && strings.EqualFold(filepath.Ext(abs), ".md"):
		return src, fmt.Errorf("SOURCE %q is a markdown file: give the folder that holds it (a skill's folder, or a folder of skills)", src.Arg)
	case fi.Mode().IsRegular():
		src.Kind = KindArchive
		src.Name = archiveStem(filepath.Base(abs))
	default:
		return src, fmt.Errorf("SOURCE %q: %s is neither a folder nor a regular file", src.Arg, abs)
	}
	return src, nil
}

func isGitRepo(dir string) bool {
	for _, p := range []string{".git", "HEAD"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return true
		}
	}
	return false
}

// isArchiveURL reports an http(s) URL whose path ends in an archive's
// extension (a query is kept: a signed download URL has one; a '#' is a
// git ref, never part of an archive URL).
func isArchiveURL(raw string) bool {
	lower := strings.ToLower(raw)
	if !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") || strings.Contains(raw, "#") {
		return false
	}
	u, err := url.Parse(raw)
	return err == nil && u.Host != "" && archiveStem(path.Base(u.Path)) != path.Base(u.Path)
}

// archiveStem is an archive's file name without its extension.
func archiveStem(name string) string {
	for _, ext := range []string{".tar.gz", ".tgz", ".zip", ".tar"} {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// remote makes a remote repository source.
func remote(src Source, loc, scheme, ref, sub string) (Source, error) {
	src.Kind, src.URL, src.Ref, src.Subdir = KindGit, loc, ref, sub
	switch strings.ToLower(scheme) {
	case "https", "http", "ssh", "git":
		u, err := url.Parse(loc)
		if err != nil || u.Host == "" || u.Path == "" || u.Path == "/" {
			return src, fmt.Errorf("SOURCE %q: %q is not a repository URL (expected %s://host/owner/repo)", src.Arg, loc, scheme)
		}
		shown := *u
		if scheme == "https" || scheme == "http" {
			shown.User = nil // a token in the URL never reaches a message or a version
		} else if u.User != nil {
			shown.User = url.User(u.User.Username())
		}
		src.Shown = shown.String()
		src.Name = path.Base(strings.TrimSuffix(u.Path, "/"))
		if (scheme == "https" || scheme == "http") && archiveStem(src.Name) != src.Name {
			// An archive to download (the registry's own downloads among
			// them): its name is the file's, without a version selector
			// (pdf@3.zip names pdf).
			if ref != "" {
				return src, fmt.Errorf("SOURCE %q: #%s asks for a git ref, but %s is an archive to download", src.Arg, ref, src.Shown)
			}
			src.Kind = KindArchive
			src.Name, _, _ = strings.Cut(archiveStem(src.Name), "@")
			if shown.RawQuery != "" {
				shown.RawQuery = "…" // a signed download URL's query is a credential
				src.Shown = shown.String()
			}
			return src, nil
		}
		if u.RawQuery != "" {
			return src, fmt.Errorf("SOURCE %q: a repository URL with a query (?%s) is refused", src.Arg, u.RawQuery)
		}
	case "scp":
		_, p, _ := strings.Cut(loc, ":")
		if p == "" || strings.HasPrefix(p, "-") {
			return src, fmt.Errorf("SOURCE %q: %q is not a repository address (expected git@host:owner/repo)", src.Arg, loc)
		}
		src.Shown = loc
		src.Name = path.Base(strings.TrimSuffix(p, "/"))
	default:
		return src, fmt.Errorf("SOURCE %q: the URL scheme %q is refused; expected https://, http://, ssh://, git:// or git@host:owner/repo", src.Arg, scheme+"://")
	}
	src.Name = strings.TrimSuffix(src.Name, ".git")
	return src, nil
}
