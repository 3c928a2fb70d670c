package skillsprotocol

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// JSON-RPC 2.0 error codes the runtime answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a protocol-level error: it becomes the JSON-RPC error object.
// Execution failures are never Errors; they are runs with status "failed".
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) *Error {
	return &Error{Code: CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

// absPathRe matches an absolute path in a message: a slash after the
// start, a space or an opening quote or bracket, up to a separator.
var absPathRe = regexp.MustCompile(`(^|[\s"'(\[=])(/[^\s"'()\[\],;:]+)`)

// sandboxRoots are the folders a run sees: paths under them name nothing
// of the host and are kept.
var sandboxRoots = []string{"/runtime", "/skills", "/blobs", "/workspace", "/usr/bin/python3"}

// hidePaths rewrites the absolute host paths in a message meant for a
// client (a server folder, the work dir, a cgroup) to "…/<last element>":
// where the server keeps its files is none of a client's business. The
// full message goes to the server's log.
func hidePaths(msg string) string {
	return absPathRe.ReplaceAllStringFunc(msg, func(m string) string {
		sub := absPathRe.FindStringSubmatch(m)
		lead, p := sub[1], sub[2]
		for _, root := range sandboxRoots {
			if p == root || strings.HasPrefix(p, root+"/") {
				return m
			}
		}
		return lead + "…/" + path.Base(p)
	})
}
