package web

import (
	"strings"
	"testing"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// Markdown images load nothing: each becomes a link to what it names,
// with its alt text and destination in the text; the page's CSP lets no
// image from another host load either.
func TestImagesBecomeLinksAndLoadNothing(t *testing.T) {
	cat := catalog.New()
	body := "# T\n\n![tracking pixel](https://tracker.example/p.gif?u=1&v=2) ![](http://cdn.example/logo.png)\n\n" +
		"![diagram](assets/diagram.svg) ![x](javascript:alert(1)) ![y](data:image/png;base64,AAAA)\n"
	e := published("t", body)
	e.Files = []catalog.File{catalog.NewFile("assets/diagram.svg", []byte("<svg onload=alert(1)></svg>"), time.Now(), nil)}
	html, err := renderMarkdown(cat, e, body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, "<img") {
		t.Fatalf("an image would load:\n%s", html)
	}
	for _, want := range []string{
		`<a href="https://tracker.example/p.gif?u=1&amp;v=2">tracking pixel (image: https://tracker.example/p.gif?u=1&amp;v=2)</a>`,
		`<a href="http://cdn.example/logo.png">image (image: http://cdn.example/logo.png)</a>`,
		`<a href="/skill/t?file=assets%2Fdiagram.svg#file">diagram (image: assets/diagram.svg)</a>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("lacks %s:\n%s", want, html)
		}
	}
	if bad := hostileMarkup(html); bad != "" || strings.Contains(html, "javascript:") || strings.Contains(html, "data:image") {
		t.Errorf("hostile image destinations survive (%s):\n%s", bad, html)
	}

	s, _ := newServer(t, Options{}, "")
	res := get(t, s, "/", nil)
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self';") || strings.Contains(csp, "http:") {
		t.Fatalf("CSP %q lets images load from other hosts", csp)
	}
}

// A file whose name needs encoding: its link opens its view, the view
// shows its skill:// URI percent-encoded as MCP lists it, and a skill://
// link to it in the body (encoded, as MCP lists it) opens the same view.
func TestOddFileNamesLinkAndShowTheirURI(t *testing.T) {
	body := "# Odd\n\nSee [the note](skill://odd/notes/with%20space%20%26%20r%C3%A9sum%C3%A9.md).\n"
	e := published("odd", body)
	e.Files = []catalog.File{catalog.NewFile("notes/with space & résumé.md", []byte("note"), time.Now(), nil)}
	s, _ := newServer(t, Options{}, "", e)
	html := bodyOf(t, get(t, s, "/skill/odd?file="+"notes%2Fwith+space+%26+r%C3%A9sum%C3%A9.md", nil))
	for _, want := range []string{
		`href="/skill/odd?file=notes%2Fwith&#43;space&#43;%26&#43;r%C3%A9sum%C3%A9.md#file"`,
		`<code>skill://odd/notes/with%20space%20%26%20r%C3%A9sum%C3%A9.md</code>`,
		"<code>note</code>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the skill page lacks %s:\n%s", want, html)
		}
	}
	// html/template writes the list's '+' as &#43;, goldmark the body's as is.
	if n := strings.Count(strings.ReplaceAll(html, "&#43;", "+"), `href="/skill/odd?file=notes%2Fwith+space+%26+r%C3%A9sum%C3%A9.md#file"`); n != 2 {
		t.Errorf("the body's skill:// link and the file list: %d links to the file's view, want 2:\n%s", n, html)
	}
}
