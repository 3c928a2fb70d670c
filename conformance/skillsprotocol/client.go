package skillsprotocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	. "github.com/onsi/gomega"
)

// client posts JSON-RPC requests to the endpoint.
type client struct{ url string }

func (c *client) raw(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return out, fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
	}
	return out, nil
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call sends one request (id 1) and returns the result or the error; every
// result is checked against its schema in testdata/results.schema.json.
func call(method string, params any) (json.RawMessage, *rpcError) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
	Expect(err).NotTo(HaveOccurred())
	out, err := rpc.raw(context.Background(), body)
	Expect(err).NotTo(HaveOccurred())
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *rpcError       `json:"error"`
		ID      json.RawMessage `json:"id"`
	}
	Expect(json.Unmarshal(out, &resp)).To(Succeed(), string(out))
	Expect(resp.JSONRPC).To(Equal("2.0"))
	Expect(string(resp.ID)).To(Equal("1"))
	if resp.Error != nil {
		Expect(resp.Result).To(BeNil())
		return nil, resp.Error
	}
	validate(method, resp.Result)
	return resp.Result, nil
}

// ok expects a result and decodes it into out.
func ok(method string, params any, out any) {
	res, perr := call(method, params)
	Expect(perr).To(BeNil(), "%s %v", method, params)
	if out != nil {
		Expect(json.Unmarshal(res, out)).To(Succeed(), string(res))
	}
}

// fails expects a JSON-RPC error with code and returns its message.
func fails(method string, params any, code int) string {
	res, perr := call(method, params)
	Expect(perr).NotTo(BeNil(), "%s %v answered %s", method, params, res)
	Expect(perr.Code).To(Equal(code), perr.Message)
	Expect(perr.Message).NotTo(BeEmpty())
	return perr.Message
}

var (
	schemaOnce sync.Once
	schemas    map[string]*jsonschema.Resolved
)

func validate(method string, result json.RawMessage) {
	schemaOnce.Do(func() {
		raw := resultsSchema
		var err error
		var top map[string]json.RawMessage
		Expect(json.Unmarshal(raw, &top)).To(Succeed())
		var defs any
		Expect(json.Unmarshal(top["$defs"], &defs)).To(Succeed())
		schemas = map[string]*jsonschema.Resolved{}
		for name, s := range top {
			if name == "$defs" || name == "$comment" {
				continue
			}
			var m map[string]any
			Expect(json.Unmarshal(s, &m)).To(Succeed())
			m["$defs"] = defs
			b, _ := json.Marshal(m)
			var sch jsonschema.Schema
			Expect(json.Unmarshal(b, &sch)).To(Succeed())
			schemas[name], err = sch.Resolve(nil)
			Expect(err).NotTo(HaveOccurred())
		}
	})
	s, found := schemas[method]
	Expect(found).To(BeTrue(), "no result schema for %s", method)
	var v any
	Expect(json.Unmarshal(result, &v)).To(Succeed())
	Expect(s.Validate(v)).To(Succeed(), "%s result %s", method, result)
}

// Run is a run result.
type Run struct {
	Status      string          `json:"status"`
	RunID       string          `json:"run_id"`
	Summary     string          `json:"summary"`
	Output      json.RawMessage `json:"output"`
	OutputBlobs []string        `json:"output_blobs"`
	LogsPreview string          `json:"logs_preview"`
	Error       *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// List is a list_skills result.
type List struct {
	Skills []struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Description string `json:"description"`
		Namespace   string `json:"namespace"`
		Kind        string `json:"kind"`
	} `json:"skills"`
	NextCursor *string `json:"next_cursor"`
}

// Names are "name@version" of each listed skill.
func (l List) Names() []string {
	out := make([]string, len(l.Skills))
	for i, s := range l.Skills {
		out[i] = s.Name + "@" + s.Version
	}
	return out
}

func runCode(code string, extra map[string]any) Run {
	params := map[string]any{"language": "python", "code": code}
	for k, v := range extra {
		params[k] = v
	}
	var r Run
	ok("run_code", params, &r)
	return r
}
