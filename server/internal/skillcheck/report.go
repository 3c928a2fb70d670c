package skillcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats of Report.Write.
const (
	FormatText   = "text"   // FILE:LINE: severity: message, then a summary line
	FormatGitHub = "github" // GitHub Actions workflow commands (annotations), then the summary
	FormatJSON   = "json"   // the Report as one JSON object
)

// Write prints the report in format.
func (r Report) Write(w io.Writer, format string) {
	if format == FormatJSON {
		if r.Findings == nil {
			r.Findings = []Finding{}
		}
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	for _, f := range r.Findings {
		if format == FormatGitHub {
			props := "file=" + ghProperty(f.File)
			if f.Line > 0 {
				props += fmt.Sprintf(",line=%d", f.Line)
			}
			fmt.Fprintf(w, "::%s %s::%s\n", f.Severity, props, ghData(f.Message))
			continue
		}
		fmt.Fprintln(w, f.String())
	}
	fmt.Fprintln(w, r.Summary())
}

// String is the text form: FILE:LINE: severity: message.
func (f Finding) String() string {
	at := f.File
	if f.Line > 0 {
		at += fmt.Sprintf(":%d", f.Line)
	}
	return fmt.Sprintf("%s: %s: %s", at, f.Severity, f.Message)
}

// Summary is the last line of the text and github formats.
func (r Report) Summary() string {
	return fmt.Sprintf("%s, %s in %d skills, %d prompts, %d markdown files checked",
		plural(r.Errors, "error"), plural(r.Warnings, "warning"), r.Skills, r.Prompts, r.Files)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// ghData escapes a workflow command's message, ghProperty a property
// value (GitHub's toCommandValue and escapeProperty in @actions/core).
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
