package search

import (
	"strings"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// FieldsOf reads the searchable texts of a catalog entry. The body is read
// once here (a folder skill's from its file); an unreadable body indexes
// the rest.
func FieldsOf(e *catalog.Entry) Fields {
	f := Fields{Name: e.ID, Title: e.Title, Description: e.Description}
	if name, ok := e.Frontmatter.Fields.String("name"); ok && name != "" && !strings.HasSuffix(e.ID, name) {
		f.Name += " " + name
	}
	if d, ok := e.Frontmatter.Fields.String("description"); ok && strings.TrimSpace(d) != "" {
		f.Description = d
	}
	if body, err := e.Body.String(); err == nil {
		f.Body = body
		f.Headings = headings(body)
	}
	return f
}

// headings are the body's markdown headings below the title (## and
// deeper), one per line, outside fenced code.
func headings(body string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(body) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(t, "##") {
			continue
		}
		b.WriteString(strings.TrimLeft(t, "# "))
		b.WriteByte('\n')
	}
	return b.String()
}

// Follow indexes every entry of cat that keep accepts (nil: all) and
// keeps the index in step with the catalog's change events, one skill per
// change, until the returned stop function is called. Changes that arrive
// while the catalog is first read are applied after it, in order, so the
// index ends at the catalog's latest state.
func (x *Index) Follow(cat *catalog.Catalog, keep func(*catalog.Entry) bool) (stop func()) {
	if keep == nil {
		keep = func(*catalog.Entry) bool { return true }
	}
	ready := make(chan struct{})
	cancel := cat.Subscribe(func(ch catalog.Change) {
		<-ready
		if ch.Entry != nil && keep(ch.Entry) {
			_ = x.Put(ch.ID, FieldsOf(ch.Entry))
		} else {
			x.Remove(ch.ID)
		}
	})
	for _, e := range cat.List() {
		if keep(e) {
			_ = x.Put(e.ID, FieldsOf(e))
		}
	}
	close(ready)
	return cancel
}
