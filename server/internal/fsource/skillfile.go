package fsource

// iii-directory skills: <path>.md files.

import (
	"fmt"
	"path"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// summary fills Title and Description without keeping the body alive.
func summary(e *catalog.Entry, body string) {
	e.SetSummary(body)
	e.Title = strings.Clone(e.Title)
	e.Description = strings.Clone(e.Description)
}

func (f *folder) loadFileSkill(o *scanOut, rel string) {
	id := strings.TrimSuffix(rel, ".md")
	if err := registry.ValidateID(id); err != nil {
		o.problem(rel, fmt.Sprintf(fmtInvalidID, rules.RustQuote(id), err))
		return
	}
	data, fi, fm, body, ok := f.markdown(o, rel, false)
	if !ok {
		return
	}
	if !checkBody(body) {
		o.problem(rel, msgEmptyBody)
		return
	}
	base := path.Base(rel)
	e := &catalog.Entry{
		ID:          id,
		Kind:        catalog.KindInstruction,
		Frontmatter: fm,
		Body:        catalog.Lazy(int64(len(body)), f.bodyLoader(rel, false)),
		BodyDigest:  catalog.DigestOfString(body),
		Files: []catalog.File{{
			Path: base, Size: int64(len(data)), Digest: catalog.DigestOfString(data), MIME: catalog.MIMEType(base),
			Modified: fi.ModTime(), Content: catalog.Lazy(int64(len(data)), f.fileLoader(rel)),
		}},
		Main:     base,
		Origin:   catalog.Origin{Kind: catalog.OriginFolder, Source: f.root, Path: rel},
		Modified: fi.ModTime(),
	}
	summary(e, body)
	o.add(&unit{kind: unitFile, path: rel, entry: e})
}
