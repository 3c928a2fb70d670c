package skillsext

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/catalog"
)

// Manifest is the deterministic manifest of a skill with files (a folder
// skill, a bundle), whose sha256 is the skill's digest: what its listings
// carry as sha256 and what a pin @sha256:<hex> names (docs/trust.md). It is
// the canonical JSON (RFC 8785: sorted keys, no whitespace) of the array
// of every file, sorted by path (bytewise):
//
//	[{"path":"SKILL.md","sha256":"<hex>","size":123},{"path":"scripts/run.sh",…}]
//
// path is relative to the skill root, '/'-separated; sha256 the lowercase
// hex of the file's bytes; size their count.
func Manifest(files []catalog.File) []byte {
	b := make([]byte, 0, 16+len(files)*112)
	b = append(b, '[')
	for i, f := range files { // catalog entries keep Files sorted by Path
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = rules.AppendCanonicalString(b, f.Path)
		b = append(b, `,"sha256":"`...)
		b = hex.AppendEncode(b, f.Digest[:])
		b = append(b, `","size":`...)
		b = strconv.AppendInt(b, f.Size, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// ContentDigest is the digest of what e serves: the sha256 of its body for
// a published skill (its registry version's sha256), of its Manifest for
// a skill with files.
func ContentDigest(e *catalog.Entry) catalog.Digest {
	if len(e.Files) == 0 {
		if e.BodyDigest.IsZero() {
			if body, err := e.Body.String(); err == nil {
				return catalog.DigestOfString(body)
			}
		}
		return e.BodyDigest
	}
	return sha256.Sum256(Manifest(e.Files))
}
