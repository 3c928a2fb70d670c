package catalog

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/registry"
)

// FileText is what a text surface (skill::fetch, skills::resources-read,
// directory::skills::fetch-skill) serves for the file rel of e: the text
// and its media type for a text file (by type, or for an unknown type by
// content: valid UTF-8 without NUL bytes), and for a binary file a short
// markdown notice with its media type, size and the skill:// URI that
// serves its bytes, never the bytes themselves. ok is false when e has no
// such file.
func FileText(e *Entry, rel string) (text, mime string, ok bool, err error) {
	f, ok := e.File(rel)
	if !ok {
		return "", "", false, nil
	}
	if IsText(f.MIME) || f.MIME == "application/octet-stream" {
		b, err := f.Content.Bytes()
		if err != nil {
			return "", "", true, fmt.Errorf("read %s of skill %s: %w", rel, e.ID, err)
		}
		if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
			mime := f.MIME
			if mime == "application/octet-stream" {
				mime = "text/plain"
			}
			return string(b), mime, true, nil
		}
	}
	return BinaryNotice(e.ID, f), "text/markdown", true, nil
}

// BinaryNotice tells a text reader what a binary file is and where its
// bytes are served.
func BinaryNotice(skillID string, f File) string {
	return fmt.Sprintf("Binary file %s of skill %s (%s, %d bytes): not shown as text. "+
		"Read its bytes at %s (MCP resources/read, or the read_skill tool), which serves them base64-encoded with their MIME type.",
		f.Path, skillID, f.MIME, f.Size, registry.SkillFileURI(skillID, f.Path))
}
