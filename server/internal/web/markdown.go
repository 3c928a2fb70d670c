package web

import (
	"bytes"
	"html"
	"net/url"
	"path"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// linker maps a link destination written in a skill to the href the page
// uses, or reports that it must not become a link.
type linker struct {
	cat   *catalog.Catalog
	entry *catalog.Entry // the skill whose body is rendered (its files resolve relative links)
}

var linkerKey = parser.NewContextKey()

// markdown renders CommonMark + GitHub tables, strikethrough, task lists
// and autolinks. Raw HTML is never passed through (goldmark's default
// without html.WithUnsafe: it becomes "<!-- raw HTML omitted -->"); the
// transformer below rewrites or drops every link and image destination.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkRewriter{}, 0))),
)

// renderMarkdown renders body, rewriting links for entry's page.
func renderMarkdown(cat *catalog.Catalog, entry *catalog.Entry, body string) (string, error) {
	var buf bytes.Buffer
	pc := parser.NewContext()
	pc.Set(linkerKey, &linker{cat: cat, entry: entry})
	if err := markdown.Convert([]byte(body), &buf, parser.WithContext(pc)); err != nil {
		return "", err
	}
	return buf.String(), nil
}

type linkRewriter struct{}

// Transform rewrites link and image destinations through the linker:
// allowed ones get their page href, others lose the link and keep the text.
func (linkRewriter) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	l, _ := pc.Get(linkerKey).(*linker)
	if l == nil {
		l = &linker{}
	}
	src := reader.Source()
	type edit struct{ old, new ast.Node }
	var edits []edit
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			// The page's own <h1> is the skill's title: the body's headings
			// nest under it, and a leading H1 that repeats it is dropped.
			if n.Level == 1 && n == doc.FirstChild() && l.entry != nil && string(nodeText(n, src)) == l.entry.DisplayTitle() {
				edits = append(edits, edit{n, nil})
				return ast.WalkSkipChildren, nil
			}
			n.Level = min(n.Level+1, 6)
		case *ast.Link:
			if href, ok := l.href(string(n.Destination)); ok {
				n.Destination = rendered(href)
			} else {
				edits = append(edits, edit{n, nil}) // unwrap: keep the children
			}
		case *ast.Image:
			// No image loads: an image becomes a link to what it names
			// (a remote URL, one of the skill's files, another skill),
			// its alt text and destination in the text. A remote image
			// would tell any host the skill's author picks who reads the
			// page and when; a skill's own files are never served raw
			// from this origin (an SVG is a script there).
			if href, ok := l.href(string(n.Destination)); ok {
				label := strings.TrimSpace(string(nodeText(n, src)))
				if label == "" {
					label = "image"
				}
				link := ast.NewLink()
				link.Destination = rendered(href)
				link.AppendChild(link, ast.NewString([]byte(label+" (image: "+html.UnescapeString(strings.TrimSpace(string(n.Destination)))+")")))
				edits = append(edits, edit{n, link})
			} else {
				edits = append(edits, edit{n, nil})
			}
			return ast.WalkSkipChildren, nil
		case *ast.AutoLink:
			label := n.Label(src)
			if href, ok := l.href(string(n.URL(src))); ok {
				link := ast.NewLink()
				link.Destination = rendered(href)
				link.AppendChild(link, ast.NewString(label))
				edits = append(edits, edit{n, link})
			} else {
				edits = append(edits, edit{n, ast.NewString(label)})
			}
		}
		return ast.WalkContinue, nil
	})
	for _, e := range edits {
		parent := e.old.Parent()
		if parent == nil {
			continue
		}
		if e.new != nil {
			parent.ReplaceChild(parent, e.old, e.new)
			continue
		}
		if _, isHeading := e.old.(*ast.Heading); isHeading {
			parent.RemoveChild(parent, e.old)
			continue
		}
		if _, isImage := e.old.(*ast.Image); isImage {
			// An image that may not load shows its alt text.
			parent.ReplaceChild(parent, e.old, ast.NewString(nodeText(e.old, src)))
			continue
		}
		for c := e.old.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, e.old, c)
			c = next
		}
		parent.RemoveChild(parent, e.old)
	}
}

// nodeText is the plain text under n.
func nodeText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch t := c.(type) {
			case *ast.Text:
				b.Write(t.Segment.Value(src))
			case *ast.String:
				b.Write(t.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

// href maps a link's destination (an image's too: the renderer makes
// images links, it loads none): http(s) and mailto stay, iii://<id> and
// skill://<id>/<file> become this page's links, a relative
// path naming one of the skill's files opens its view, other relative
// links stay; everything else (javascript:, data:, vbscript:, file:,
// unparsable URLs) is refused.
func (l *linker) href(dest string) (string, bool) {
	// Decide on what the browser would see: entities resolved, and no
	// control or space characters, which browsers strip ("java\tscript:").
	dest = html.UnescapeString(strings.TrimSpace(dest))
	if dest == "" || strings.IndexFunc(dest, func(r rune) bool { return r <= ' ' || r == 0x7f || unicode.IsSpace(r) }) >= 0 {
		return "", false
	}
	if first, _, _ := strings.Cut(strings.SplitN(strings.SplitN(dest, "?", 2)[0], "#", 2)[0], "/"); strings.Contains(first, ":") &&
		!strings.Contains(dest, "://") && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		return "", false // a scheme url.Parse did not take for one
	}
	u, err := url.Parse(dest)
	if err != nil {
		return "", false
	}
	switch u.Scheme {
	case "http", "https":
		return u.String(), u.Host != ""
	case "mailto":
		return u.String(), true
	case "iii":
		return l.iiiHref(u)
	case "skill":
		return l.skillHref(dest)
	case "":
		if u.Host != "" { // //host/path: another site over the page's scheme
			return u.String(), true
		}
		if u.Path != "" && !strings.HasPrefix(u.Path, "/") && l.entry != nil {
			if f, ok := l.entry.File(strings.TrimPrefix(u.Path, "./")); ok {
				return fileHref(l.entry.ID, f.Path), true
			}
			if id, ok := l.folderLink(u.Path); ok {
				return skillHref(id), true
			}
		}
		return u.String(), true
	}
	return "", false
}

// folderLink resolves a relative link between two skills of one folder
// ("../pdf-processing/SKILL.md", "other.md") to the id of the skill it
// names, by the folder rules: a SKILL.md is its directory, another .md
// file its path without ".md".
func (l *linker) folderLink(rel string) (string, bool) {
	o := l.entry.Origin
	if l.cat == nil || (o.Kind != catalog.OriginFolder && o.Kind != catalog.OriginBundle) || o.Path == "" {
		return "", false
	}
	target := path.Join(path.Dir(o.Path), rel)
	if target == "." || strings.HasPrefix(target, "../") || target == ".." {
		return "", false
	}
	var id string
	switch {
	case path.Base(target) == "SKILL.md":
		id = path.Dir(target)
	case strings.HasSuffix(target, ".md"):
		id = strings.TrimSuffix(target, ".md")
	default:
		id = target // a link to a skill's folder
	}
	if e, ok := l.cat.Get(id); ok && e.Origin.Source == o.Source {
		return e.ID, true
	}
	return "", false
}

// iiiHref: iii://skills is the catalog, iii://<id> a skill page. Section
// URIs (iii://fn/…) call functions when fetched and are not links here.
func (l *linker) iiiHref(u *url.URL) (string, bool) {
	id := strings.Trim(u.Host+u.Path, "/")
	switch {
	case id == "skills":
		return "/", true
	case id == "" || id == "fn" || strings.HasPrefix(id, "fn/"):
		return "", false
	}
	return skillHref(id), true
}

// skillHref maps skill://<id>/SKILL.md and skill://<id>/<file> (the MCP
// Skills extension form, its path percent-decoded once as every read
// decodes it): the longest prefix that is a catalog id is the skill.
func (l *linker) skillHref(uri string) (string, bool) {
	if strings.Trim(strings.TrimPrefix(uri, registry.SkillScheme), "/") == "" {
		return "/", true
	}
	rest, err := registry.ParseSkillURI(strings.TrimSuffix(uri, "/"))
	if err != nil {
		return "", false // names no file: the text stays, without a link
	}
	if l.cat != nil {
		for cut := len(rest); cut > 0; cut = strings.LastIndexByte(rest[:cut], '/') {
			id := rest[:cut]
			if e, ok := l.cat.Get(id); ok {
				file := strings.TrimPrefix(rest[cut:], "/")
				if file == "" || strings.EqualFold(file, "SKILL.md") {
					return skillHref(e.ID), true
				}
				return fileHref(e.ID, file), true
			}
		}
	}
	return skillHref(strings.TrimSuffix(rest, "/SKILL.md")), true
}

// rendered is href as goldmark's renderer expects a destination: it
// resolves character references again, so '&' is written as one.
func rendered(href string) []byte {
	return []byte(strings.ReplaceAll(href, "&", "&amp;"))
}

// skillHref is the page of a skill; each id segment is escaped.
func skillHref(id string) string { return "/skill/" + escapePath(id) }

// fileHref is the view of one file of a skill.
func fileHref(id, file string) string {
	return skillHref(id) + "?file=" + url.QueryEscape(file) + "#file"
}
