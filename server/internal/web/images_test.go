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
