package mcp_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKComparesMcpNameRaw pins the go-sdk behaviour that mcpname.go
// works around: a bare go-sdk v1.8.0 server refuses a 2026-07-28
// resources/read whose Mcp-Name carries the URI Base64-wrapped, as the
// transport allows, with -32020 header mismatch. When this test fails,
// go-sdk decodes the header itself (go-sdk pull request 1242 released):
// delete mcpname.go, its use in HTTPHandler and this test.
func TestGoSDKComparesMcpNameRaw(t *testing.T) {
	const uri = "skill://odd/résumé.md"
	s := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "skill://{+path}", Name: "skill"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, Text: "read"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	defer srv.Close()
	encoded := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(uri)) + "?="
	_, _, rerr := mcpPost(t, srv.URL, v2026, "", map[string]string{"Mcp-Name": encoded}, "resources/read", map[string]any{"uri": uri})
	if rerr == nil {
		t.Fatal("go-sdk accepts a Base64-wrapped Mcp-Name on its own now: delete server/internal/mcp/mcpname.go, " +
			"its use in HTTPHandler and this test (the workaround is no longer needed)")
	}
	if rerr.Code != -32020 {
		t.Fatalf("go-sdk refused the encoded Mcp-Name with %v; expected -32020 header mismatch", rerr)
	}
}

// TestEncodedMcpNameIsDecoded: through HTTPHandler the same request reads
// the resource, and a wrapper that is not Base64 is still refused.
func TestEncodedMcpNameIsDecoded(t *testing.T) {
	s := newStack(t)
	s.seed()
	s.startMCP(skillsmcp.Options{})
	endpoint := s.serveHTTP(skillsmcp.HTTPOptions{})
	const uri = "iii://demo"
	for header, ok := range map[string]bool{
		"=?base64?" + base64.StdEncoding.EncodeToString([]byte(uri)) + "?=": true,
		uri:                           true,
		"=?base64?%%%?=":              false,
		"=?base64?aWlpOi8vb3RoZXI=?=": false, // iii://other: decodes, but names another resource
	} {
		_, _, rerr := mcpPost(t, endpoint, v2026, "", map[string]string{"Mcp-Name": header}, "resources/read", map[string]any{"uri": uri})
		if ok && rerr != nil {
			t.Errorf("Mcp-Name %q: %v", header, rerr)
		}
		if !ok && (rerr == nil || rerr.Code != -32020) {
			t.Errorf("Mcp-Name %q: %v; want -32020 header mismatch", header, rerr)
		}
	}
}
