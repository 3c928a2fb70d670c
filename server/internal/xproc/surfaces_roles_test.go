package xproc

// The other processes of the surface benchmarks (mcp_bench_test.go,
// web_bench_test.go): this test binary started again in a role.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// roleBareMCP is a bare go-sdk MCP server over Streamable HTTP (both
	// protocol revisions) that answers every iii:// and skill:// read with
	// one constant 2 KiB resource and prompts/get of "greet" with one
	// constant message.
	roleBareMCP = "bare-mcp"
	// roleStaticHTML serves the file named by htmlEnv from memory at every
	// path, as text/html.
	roleStaticHTML = "static-html"
	htmlEnv        = "XPROC_HTML"
	// rolePromptPublisher is a publisher on the engine at XPROC_UPSTREAM:
	// it registers prompt "greet" rendered by its function bench::greet,
	// prints "ready" and serves until killed.
	rolePromptPublisher = "prompt-publisher"

	greetText = "Say hello to the reader of this benchmark, warmly and briefly."
)

// serveBareMCP is roleBareMCP.
func serveBareMCP(ln net.Listener) error {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	body := strings.Repeat("x", answerBytes)
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: body}}}, nil
	}
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "iii://{+path}", Name: "iii"}, read)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "skill://{+path}", Name: "skill"}, read)
	srv.AddPrompt(&sdk.Prompt{Name: "greet", Arguments: []*sdk.PromptArgument{{Name: "who"}}},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: greetText}}}}, nil
		})
	// Both protocol revisions, routed the way the skills server routes
	// them: 2026-07-28 requests to a stateless handler, the rest to a
	// stateful one.
	get := func(*http.Request) *sdk.Server { return srv }
	stateless := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true})
	stateful := sdk.NewStreamableHTTPHandler(get, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	}))
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, mux)
}

// serveStaticHTML is roleStaticHTML.
func serveStaticHTML(ln net.Listener) error {
	page, err := os.ReadFile(os.Getenv(htmlEnv))
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(page)
	}))
}

// publishPrompt is rolePromptPublisher.
func publishPrompt(engineURL string) error {
	c := iii.RegisterWorker(engineURL, iii.WithName("bench-publisher"))
	if _, err := c.RegisterFunction("bench::greet", func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": greetText}}}}, nil
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	in, _ := json.Marshal(map[string]any{"name": "greet", "description": "Greets the reader.", "function_id": "bench::greet",
		"arguments": []map[string]any{{"name": "who"}}})
	for {
		_, err := c.Trigger(ctx, iii.TriggerRequest{FunctionID: rules.FnPromptsRegister, Data: in, Timeout: 5 * time.Second})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("ready")
	select {}
}
