package web

import (
	"crypto/subtle"
	"fmt"
	"html/template"
	"time"
	"unicode/utf8"
)

var funcs = template.FuncMap{"promptHref": promptHref}

// trustedHTML marks goldmark's output (raw HTML off, links filtered) as
// safe to insert.
func trustedHTML(s string) template.HTML { return template.HTML(s) } //nolint:gosec // sanitized by renderMarkdown

func tokenEqual(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d\u00a0B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f\u00a0KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f\u00a0MiB", float64(n)/(1024*1024))
	}
}

func age(t, now time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
