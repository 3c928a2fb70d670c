package registry

import (
	"strings"
	"unicode"
)

// SelectFetchURIs picks and checks the URIs of a skills::fetch_skill /
// skill::fetch call before anything is read:
//
//  1. uris is used when it is non-empty; otherwise uri when it is non-nil
//     and non-blank; otherwise MsgFetchNoInput. A chosen uris list never
//     falls back to uri.
//  2. Entries are trimmed and blank ones dropped; nothing left gives
//     MsgFetchNoInput.
//  3. Every entry must start with iii:// (the first offender gives
//     FmtFetchInvalidURI). With acceptBare (the iii-directory rule), an
//     entry without "://" is a bare skill path and gets iii:// prefixed;
//     an entry with "://" and another scheme is still rejected. With
//     acceptBare false this is strict v0.2.2.
//
// The returned URIs are the trimmed (and possibly prefixed) entries, in
// order, duplicates kept; they are also the headings of the sections.
func SelectFetchURIs(uri *string, uris []string, acceptBare bool) ([]string, error) {
	var raw []string
	switch {
	case len(uris) > 0:
		raw = uris
	case uri != nil && strings.TrimSpace(*uri) != "":
		raw = []string{*uri}
	default:
		return nil, ErrFetchNoInput()
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		if t := strings.TrimSpace(r); t != "" {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, ErrFetchNoInput()
	}
	for i, u := range out {
		if strings.HasPrefix(u, Scheme) {
			continue
		}
		if acceptBare && !strings.Contains(u, "://") {
			out[i] = Scheme + u
			continue
		}
		return nil, ErrFetchInvalidURI(u)
	}
	return out, nil
}

// FormatFetchSection renders one fetched resource: "# {uri}\n\n" followed
// by text with trailing whitespace removed.
func FormatFetchSection(uri, text string) string {
	return "# " + uri + "\n\n" + strings.TrimRightFunc(text, unicode.IsSpace)
}

// JoinFetchSections joins sections with FetchSectionSeparator.
func JoinFetchSections(sections []string) string {
	return strings.Join(sections, FetchSectionSeparator)
}

// JoinContentTexts joins the text of every content item of a read result
// with "\n" (the text a fetch section is built from; the mime type is
// dropped).
func JoinContentTexts(r ReadResult) string {
	texts := make([]string, len(r.Contents))
	for i, c := range r.Contents {
		texts[i] = c.Text
	}
	return strings.Join(texts, "\n")
}
