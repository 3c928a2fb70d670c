package skillsync

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Source is a registry the sync reads: the skills it serves with every
// file's sha256, a skill at a selector, file bytes, search, and change
// notifications. source_http.go reads the registry's HTTP listener (MCP
// Skills extension), source_iii.go its catalog functions over iii.
type Source interface {
	// List returns every skill the registry serves, in path order.
	List(ctx context.Context) ([]Listed, error)
	// Get returns the skill at path: an id, or id@N, id@label,
	// id@sha256:<hex>. ok is false when the registry serves nothing there.
	Get(ctx context.Context, path string) (s Listed, ok bool, err error)
	// ReadFile returns the bytes of one file of the skill at path (as Get
	// names it).
	ReadFile(ctx context.Context, path, file string) ([]byte, error)
	// Search returns the ids the registry's search ranks for query, best
	// first, at most limit; low is true when nothing matched well.
	Search(ctx context.Context, query string, limit int) (ids []string, low bool, err error)
	// Watch calls changed (from another goroutine) each time a skill of
	// the registry may have changed, until stop is called or ctx ends.
	Watch(ctx context.Context, changed func()) (stop func(), err error)
	// Close ends the connection.
	Close() error
}

// versioner is what a Source can say about registry versions beyond the
// listing (source_iii.go, through skills::versions).
type versioner interface {
	// ServedVersion is the registry version of published skill id whose
	// SKILL.md has digest skillMD (the one served), or 0 when unknown.
	ServedVersion(ctx context.Context, id, skillMD string) (int, error)
	// VersionByDigest is the version of published skill id whose content
	// has sha256 hex, or 0 when none has.
	VersionByDigest(ctx context.Context, id, hex string) (int, error)
}

// Listed is one skill as a registry serves it.
type Listed struct {
	// Path is what the registry was asked for: the id, or id@selector.
	Path string
	// ID is the skill id (Path without its selector).
	ID string
	// Name is the frontmatter name: the folder the skill is written to.
	Name string
	// Origin is where the registry has it from: published, folder, bundle
	// or builtin ("" when it does not say).
	Origin string
	// Dynamic marks a skill whose SKILL.md links to live iii://fn/
	// sections: it has no stable content to copy.
	Dynamic bool
	// Files is SKILL.md and every supporting file, with the registry's
	// sha256 of each.
	Files []File
	// Meta is what the registry reports about the version, when it does.
	Meta Meta
	// Problem, when set, is why the registry does not serve the skill
	// (a registry that says so: over iii).
	Problem string
}

// File is one file of a listed skill.
type File struct {
	Path   string // relative, '/'-separated
	Size   int64
	SHA256 string // lowercase hex
}

// Meta is what a registry may report about the version it serves: its
// number, the digest of its content, the signature verdict and signer,
// and whether it is yanked or the skill deprecated. Every field is empty
// when the registry does not say.
type Meta struct {
	Version int
	SHA256  string
	// Signed is "signed" or "unsigned" when the registry reports a
	// verdict; SignedBy and Key name the signer of a signed version.
	Signed   string
	SignedBy string
	Key      string
	// Yanked is the reason a yanked version was withdrawn.
	Yanked string
	// Deprecated is the message of a deprecated skill.
	Deprecated string
}

// Open connects to the registry at rawURL: http(s):// is its HTTP listener
// (the MCP endpoint; a URL without a path means /mcp), ws(s):// an iii
// engine running the registry. token is the bearer token (HTTP) or the
// engine's worker token (iii).
func Open(ctx context.Context, rawURL, token string) (Source, error) {
	u, err := ParseSourceURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		return openHTTP(ctx, u.String(), token)
	default:
		return openIII(ctx, u.String(), token)
	}
}

// ParseSourceURL checks a registry URL and returns it in the form the lock
// records: http(s) URLs name the MCP endpoint (/mcp when no path is
// given); user information is refused (a token goes in --token, never in a
// file the lock may be committed with).
func ParseSourceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("registry URL %q: %w (expected http(s)://host:port[/mcp] or ws(s)://host:port)", raw, err)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return nil, fmt.Errorf("registry URL %q: scheme %q is not one of http, https (the registry's HTTP listener) or ws, wss (an iii engine)", raw, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("registry URL %q has no host (expected e.g. http://127.0.0.1:49135 or ws://127.0.0.1:49134)", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("registry URL %q carries user information: give the token with --token instead (the URL is written to the lock)", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("registry URL %q has a query or fragment; expected scheme://host:port[/path]", raw)
	}
	if (u.Scheme == "http" || u.Scheme == "https") && (u.Path == "" || u.Path == "/") {
		u.Path = "/mcp"
	}
	return u, nil
}

// maxListed bounds the skills a registry's listing may hold (a registry
// that lists without end is refused, not followed out of memory).
const maxListed = 100_000

// ErrNotServed is wrapped by errors about a skill the registry does not
// serve at the path asked.
var ErrNotServed = errors.New("not served by the registry")

// splitPath splits "id@selector" into id and selector ("" when none).
func splitPath(p string) (id, sel string) {
	if i := strings.IndexByte(p, '@'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, ""
}
