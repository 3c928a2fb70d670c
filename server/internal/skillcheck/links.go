package skillcheck

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/iii-skills/skills/server/internal/registry"
)

var (
	// inlineLinkRe is a markdown inline link or image: [text](target "title").
	inlineLinkRe = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	// refDefRe is a link reference definition: [label]: target.
	refDefRe = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// bareIIIRe is an iii:// URI anywhere in the text (autolinks, prose).
	bareIIIRe = regexp.MustCompile(`iii://[^\s)\]>"'` + "`" + `,]*`)
	// schemeRe marks absolute URLs (http:, mailto:, …).
	schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// inlineCodeRe is a code span; links inside one are examples.
	inlineCodeRe = regexp.MustCompile("`+[^`]*`+")
)

// checkLinks follows every link of d outside code blocks and spans.
func (c *checker) checkLinks(d doc) {
	fence := ""
	for i, line := range strings.Split(d.text, "\n") {
		n := i + 1
		if d.atLine > 0 {
			n = d.atLine
		}
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		// A code span's text is an example, but the link it labels
		// ([`id`](iii://id)) is real: blank the span, keep the rest.
		plain := inlineCodeRe.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
		seen := map[string]bool{}
		for _, m := range inlineLinkRe.FindAllStringSubmatch(plain, -1) {
			seen[m[1]] = true
			c.checkTarget(d, n, m[1])
		}
		if m := refDefRe.FindStringSubmatch(plain); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			c.checkTarget(d, n, m[1])
		}
		for _, u := range bareIIIRe.FindAllString(plain, -1) {
			u = strings.TrimRight(u, ".:;!?")
			if !seen[u] {
				seen[u] = true
				c.checkTarget(d, n, u)
			}
		}
	}
}

func (c *checker) checkTarget(d doc, line int, target string) {
	switch {
	case strings.HasPrefix(target, registry.Scheme):
		c.checkIII(d, line, target)
	case strings.HasPrefix(target, "#"), schemeRe.MatchString(target), strings.HasPrefix(target, "//"):
		// Anchors and other schemes are not ours to check.
	default:
		c.checkRelative(d, line, target)
	}
}

// checkRelative: a relative link should name a file or folder that exists
// (a warning, an error under Options.Strict: the server serves the skill
// either way, and a harness that follows the link finds nothing); in a
// skill folder it should stay inside it (harnesses read a skill's files
// through the skill, nothing else).
func (c *checker) checkRelative(d doc, line int, target string) {
	if d.atLine > 0 {
		return // a published body has no folder to resolve against
	}
	p := target
	if i := strings.IndexAny(p, "#?"); i >= 0 {
		p = p[:i]
	}
	if p == "" {
		return
	}
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	var abs string
	if strings.HasPrefix(p, "/") {
		c.add(Warning, d.file, line, "link", fmt.Sprintf("link %s is an absolute path: it depends on the machine; link relative to the skill", target))
		return
	}
	abs = filepath.Join(filepath.Dir(d.file), filepath.FromSlash(p))
	if _, err := os.Stat(abs); err != nil {
		sev := Warning
		if c.opts.Strict {
			sev = Error
		}
		c.add(sev, d.file, line, "link", fmt.Sprintf("link %s: no such file (looked for %s)", target, c.rel(abs)))
		return
	}
	if d.skillDir != "" && !within(abs, d.skillDir) {
		c.add(Warning, d.file, line, "link", fmt.Sprintf("link %s leaves the skill folder %s: it is not one of the skill's files", target, c.rel(d.skillDir)))
	}
}

func within(p, dir string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

// checkIII: the URI must parse like skill::fetch parses it; a skill must be
// in the checked set (or on the server); a section must not be hidden.
func (c *checker) checkIII(d doc, line int, uri string) {
	if i := strings.IndexAny(uri, "#?"); i >= 0 {
		uri = uri[:i]
	}
	t, err := registry.ParseURI(uri)
	if err != nil {
		c.add(Error, d.file, line, "iii-link", fmt.Sprintf("link %s: %v", uri, err))
		return
	}
	switch t.Kind {
	case registry.TargetSkill:
		if c.ids[t.ID] || t.ID == "directory/skills" {
			return
		}
		if c.opts.Remote != nil {
			ok, err := c.remoteHas("skill:"+t.ID, func() (bool, error) { return c.opts.Remote.HasSkill(c.ctx, t.ID) })
			switch {
			case err != nil:
				c.add(Error, d.file, line, "iii-link", fmt.Sprintf("link %s: cannot ask the server: %v", uri, err))
			case !ok:
				c.add(Error, d.file, line, "iii-link", fmt.Sprintf("link %s: no skill %s in the checked folders or on the server", uri, t.ID))
			}
			return
		}
		c.add(Error, d.file, line, "iii-link", fmt.Sprintf("link %s: no skill %s in the checked set (check it together with the folder that has it, or give --url of a registry that serves it)", uri, t.ID))
	case registry.TargetSection:
		if err := registry.CheckSection(t.FunctionID); err != nil {
			c.add(Error, d.file, line, "section", fmt.Sprintf("link %s: %v", uri, err))
			return
		}
		if c.opts.Remote != nil {
			ok, err := c.remoteHas("fn:"+t.FunctionID, func() (bool, error) { return c.opts.Remote.HasFunction(c.ctx, t.FunctionID) })
			switch {
			case err != nil:
				c.add(Error, d.file, line, "section", fmt.Sprintf("link %s: cannot ask the server: %v", uri, err))
			case !ok:
				c.add(Error, d.file, line, "section", fmt.Sprintf("link %s: no function %s on the engine", uri, t.FunctionID))
			}
		}
	}
}

// answer is one reply of Remote.
type answer struct {
	ok  bool
	err error
}

// remoteHas asks Remote once per key (a failure too: one unreachable
// server is not asked again for every link).
func (c *checker) remoteHas(key string, ask func() (bool, error)) (bool, error) {
	a, seen := c.remote[key]
	if !seen {
		a.ok, a.err = ask()
		c.remote[key] = a
	}
	return a.ok, a.err
}
