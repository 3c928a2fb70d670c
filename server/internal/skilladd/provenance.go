package skilladd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Provenance is where one registered version came from. Today the
// registry keeps it in the version's message (ProvenanceLine); it is
// returned as fields too, for a registry whose history stores them.
type Provenance struct {
	// Kind: folder, archive or git.
	Kind Kind `json:"kind"`
	// Source: the folder's or archive's absolute path, or the
	// repository's URL without credentials.
	Source string `json:"source"`
	// Ref is the #ref asked, Commit the commit it resolved to (git).
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Subdir is the :subdir asked.
	Subdir string `json:"subdir,omitempty"`
	// Path is the skill's folder (or .md file) inside the source, from
	// its root ("" when the source itself is the skill's folder).
	Path string `json:"path,omitempty"`
	// SHA256 is the archive's digest (hex), for an archive.
	SHA256 string `json:"sha256,omitempty"`
}

// provenancePrefix starts the line ProvenanceLine writes.
const provenancePrefix = "skills add: "

// Line is the provenance as one line of a version's message:
//
//	skills add: git https://github.com/o/r ref=main commit=<40 hex> path=skills/pdf
//	skills add: archive /home/me/pdf.zip sha256=<64 hex> path=pdf
//	skills add: folder /home/me/skills path=pdf
//
// After the prefix come the kind and the source, then key=value pairs in
// the order ref, commit, subdir, path, sha256 (absent ones left out). A
// source or value holding a space, a quote, '=' or a non-printable
// character is written as a Go quoted string. ParseProvenance reads it
// back.
func (p Provenance) Line() string {
	var b strings.Builder
	b.WriteString(provenancePrefix)
	b.WriteString(string(p.Kind))
	b.WriteByte(' ')
	b.WriteString(field(p.Source))
	for _, kv := range [][2]string{{"ref", p.Ref}, {"commit", p.Commit}, {"subdir", p.Subdir}, {"path", p.Path}, {"sha256", p.SHA256}} {
		if kv[1] != "" {
			b.WriteString(" " + kv[0] + "=" + field(kv[1]))
		}
	}
	return b.String()
}

// field quotes a value that would not read back as one token.
func field(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == '=' || r == 0x7f || !strconv.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// ParseProvenance finds the provenance line in a version's message (a
// message may hold other lines, such as the --message given) and reads it.
func ParseProvenance(message string) (Provenance, error) {
	for _, line := range strings.Split(message, "\n") {
		if rest, ok := strings.CutPrefix(line, provenancePrefix); ok {
			return parseLine(rest)
		}
	}
	return Provenance{}, errors.New("the message holds no " + strconv.Quote(strings.TrimSpace(provenancePrefix)) + " line")
}

func parseLine(rest string) (Provenance, error) {
	var p Provenance
	kind, rest, ok := strings.Cut(rest, " ")
	p.Kind = Kind(kind)
	if !ok || (p.Kind != KindFolder && p.Kind != KindArchive && p.Kind != KindGit) {
		return p, fmt.Errorf("provenance kind %q: expected folder, archive or git", kind)
	}
	src, rest, err := token(rest)
	if err != nil {
		return p, fmt.Errorf("provenance source: %w", err)
	}
	p.Source = src
	for rest != "" {
		rest = strings.TrimPrefix(rest, " ")
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			return p, fmt.Errorf("provenance: %q is not key=value", rest)
		}
		val, more, err := token(after)
		if err != nil {
			return p, fmt.Errorf("provenance %s: %w", key, err)
		}
		switch key {
		case "ref":
			p.Ref = val
		case "commit":
			p.Commit = val
		case "subdir":
			p.Subdir = val
		case "path":
			p.Path = val
		case "sha256":
			p.SHA256 = val
		default:
			return p, fmt.Errorf("provenance: unknown key %q", key)
		}
		rest = more
	}
	return p, nil
}

// token reads one value: a quoted string, or up to the next space.
func token(s string) (val, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", err
		}
		val, _ = strconv.Unquote(q)
		return val, s[len(q):], nil
	}
	val, rest, _ = strings.Cut(s, " ")
	if rest != "" {
		rest = " " + rest
	}
	return val, rest, nil
}
