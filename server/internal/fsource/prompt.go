package fsource

// Prompts: */prompts/*.md with a description.

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/registry"
)

// Prompt is one prompt file (iii-directory: */prompts/*.md with a
// description in its frontmatter).
type Prompt struct {
	Name        string
	Description string
	// Folder is the absolute folder root; Path the file relative to it.
	Folder   string
	Path     string
	Size     int64
	Modified time.Time
	// Body reads the frontmatter-stripped markdown from disk.
	Body catalog.Content
	// Downloaded: directory::skills::download wrote it (DownloadRecord);
	// an operator's prompt of the same name in any folder wins.
	Downloaded bool
}

func (f *folder) loadPrompt(o *scanOut, rel string) {
	_, fi, fm, body, ok := f.markdown(o, rel, true)
	if !ok {
		return
	}
	name := strings.TrimSuffix(path.Base(rel), ".md")
	if v, ok := fm.Fields.Get("name"); ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			o.problem(rel, fmt.Sprintf(fmtInvalidPrompt, rules.RustQuote(fmt.Sprint(v)), "name must be a string"))
			return
		}
		if s = strings.TrimSpace(s); s != "" {
			name = s
		}
	}
	if err := registry.ValidateName(name); err != nil {
		o.problem(rel, fmt.Sprintf(fmtInvalidPrompt, rules.RustQuote(name), err))
		return
	}
	desc, _ := fm.Fields.String("description")
	desc = strings.TrimSpace(desc)
	if desc == "" {
		o.problem(rel, msgNoPromptDesc)
		return
	}
	if !checkBody(body) {
		o.problem(rel, msgEmptyBody)
		return
	}
	p := &Prompt{
		Name: strings.Clone(name), Description: strings.Clone(desc), Folder: f.root, Path: rel,
		Size: fi.Size(), Modified: fi.ModTime(), Body: catalog.Lazy(int64(len(body)), f.bodyLoader(rel, false)),
	}
	o.add(&unit{kind: unitPrompt, path: rel, prompt: p})
}
