package mcp

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// decodeMcpName decodes a Base64-wrapped Mcp-Name header before go-sdk
// sees it. The 2026-07-28 Streamable HTTP transport lets a client send a
// name or resource URI that is not header-safe (non-ASCII, a control
// character, edge whitespace) as `Mcp-Name: =?base64?…?=` and requires the
// server to decode it before comparing it with the body; go-sdk v1.8.0
// compares the raw header and refuses such a request with -32020 "header
// mismatch" (https://github.com/modelcontextprotocol/go-sdk/issues/1234,
// fixed by https://github.com/modelcontextprotocol/go-sdk/pull/1242, merged
// after v1.8.0). A value whose wrapper is not valid Base64 is
// left as it is, and go-sdk refuses it as a mismatch.
//
// Delete this file, its one use in HTTPHandler and the test
// TestGoSDKComparesMcpNameRaw when go-sdk is upgraded to the first release
// that contains pull request 1242 (after v1.8.0): that test fails then,
// because go-sdk accepts the encoded header on its own.
func decodeMcpName(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const name, prefix, suffix = "Mcp-Name", "=?base64?", "?="
		if v := r.Header.Get(name); strings.HasPrefix(v, prefix) && strings.HasSuffix(v, suffix) && len(v) >= len(prefix)+len(suffix) {
			if b, err := base64.StdEncoding.Strict().DecodeString(v[len(prefix) : len(v)-len(suffix)]); err == nil {
				r = r.Clone(r.Context())
				r.Header.Set(name, string(b))
			}
		}
		next.ServeHTTP(w, r)
	})
}
