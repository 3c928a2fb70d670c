package skillsprotocol

import (
	"embed"
	"fmt"
	"time"

	"github.com/iii-skills/skills/server/internal/catalog"
)

//go:embed guide/skill.toml guide/SKILL.md
var guideFS embed.FS

// GuideName and GuideVersion name the built-in instruction skill every
// runtime ships; load_skills_protocol_guide returns its SKILL.md.
const (
	GuideName    = "skills.protocol.guide"
	GuideVersion = "0.1.0"
)

// GuideContent is the SKILL.md of the built-in guide.
func GuideContent() string {
	b, _ := guideFS.ReadFile("guide/SKILL.md")
	return string(b)
}

// GuideEntry is the built-in guide as a catalog entry.
func GuideEntry() (*catalog.Entry, error) {
	files := map[string][]byte{}
	for _, f := range []string{ManifestFile, InstructionsFile} {
		b, err := guideFS.ReadFile("guide/" + f)
		if err != nil {
			return nil, fmt.Errorf("guide: %w", err)
		}
		files[f] = b
	}
	return BuildEntry(files, catalog.Origin{Kind: catalog.OriginBuiltin, Source: "skills-protocol"}, time.Time{})
}
