package skillsprotocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/catalog"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/kv"
	"github.com/iii-skills/skills/server/internal/sandbox"
	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/store"
)

// fixtures are the conformance group's bundles (one copy in the repo).
const fixtures = "../../../conformance/skillsprotocol/testdata/bundles"

func quiet() *slog.Logger {
	if os.Getenv("SKILLS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is an embedded engine, an iii client, a catalog and a runtime
// served over real HTTP.
type env struct {
	t       testing.TB
	eng     *engine.Engine
	dataDir string
	client  *iii.Client
	cat     *catalog.Catalog
	rt      *sp.Runtime
	// state is the runtime's own store (blobs, published bundles).
	state kv.Store
	url   string
	// stop ends the runtime, its client and its store (before a restart).
	stop func()
}

func newEnv(t testing.TB, opts sp.Options) *env {
	t.Helper()
	dataDir := t.TempDir()
	eng, err := engine.New(engine.Config{Addr: "127.0.0.1:0", DataDir: dataDir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	e := &env{t: t, eng: eng, dataDir: dataDir}
	e.start(opts)
	return e
}

// start connects a fresh client and runtime to the engine (again after a
// restart of the runtime).
func (e *env) start(opts sp.Options) {
	t := e.t
	if e.stop != nil {
		e.stop()
	}
	// The runtime's own store, as the binary opens it (--data).
	st, err := store.Open(filepath.Join(e.dataDir, sp.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	client := iii.RegisterWorker(e.eng.URL(), iii.WithName("skills-protocol-test"), iii.WithLogger(quiet()))
	t.Cleanup(func() { _ = client.Close() })
	cat := catalog.New()
	opts.Catalog, opts.State, opts.Logger = cat, kv.Local(st), quiet()
	e.state = opts.State
	if opts.WorkDir == "" {
		// Not t.TempDir: its parent is 0700, out of the sandbox uid's reach.
		dir, err := os.MkdirTemp("", "sp-work-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		opts.WorkDir = dir
	}
	rt, err := sp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if err := rt.Register(client); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.LoadPublished(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	srv.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	t.Cleanup(srv.Close)
	e.stop = func() { srv.Close(); _ = rt.Close(); _ = client.Close(); _ = st.Close() }
	e.client, e.cat, e.rt, e.url = client, cat, rt, srv.URL
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call posts one request and returns its result or error; the result is
// checked against the tool's result schema, and params that break the
// seed's parameter schema (Tools()[i].Parameters) must be answered with
// -32602.
func (e *env) call(method string, params any) (json.RawMessage, *rpcErr) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
	raw := e.post(body)
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		e.t.Fatalf("%s: bad response %s: %v", method, raw, err)
	}
	if string(resp.ID) != "1" {
		e.t.Fatalf("%s: id %s, want 1", method, resp.ID)
	}
	if err := validateParams(method, params); err != nil && (resp.Error == nil || resp.Error.Code != sp.CodeInvalidParams) {
		// Params outside the seed's schema must be refused as invalid.
		e.t.Fatalf("%s: params %s break the seed's parameter schema (%v) but the answer is %s", method, body, err, raw)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	validate(e.t, method, resp.Result)
	return resp.Result, nil
}

var (
	paramsOnce    sync.Once
	paramSchemas  map[string]*jsonschema.Resolved
	paramsInitErr error
)

// validateParams checks params against the seed's parameter schema of
// method (Tools()[i].Parameters); nil for a method that is not a tool.
func validateParams(method string, params any) error {
	paramsOnce.Do(func() {
		paramSchemas = map[string]*jsonschema.Resolved{}
		for _, tool := range sp.Tools() {
			b, _ := json.Marshal(tool.Parameters)
			var s jsonschema.Schema
			if paramsInitErr = json.Unmarshal(b, &s); paramsInitErr != nil {
				return
			}
			if paramSchemas[tool.Name], paramsInitErr = s.Resolve(nil); paramsInitErr != nil {
				return
			}
		}
	})
	if paramsInitErr != nil {
		return fmt.Errorf("parameter schemas: %w", paramsInitErr)
	}
	rs, ok := paramSchemas[method]
	if !ok {
		return nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{} // absent params are an empty object
	}
	return rs.Validate(v)
}

// ok calls and decodes a successful result into out.
func (e *env) ok(method string, params any, out any) {
	e.t.Helper()
	res, perr := e.call(method, params)
	if perr != nil {
		e.t.Fatalf("%s %v: error %d %s", method, params, perr.Code, perr.Message)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			e.t.Fatalf("%s: decode %s: %v", method, res, err)
		}
	}
}

// fails calls and expects a JSON-RPC error with code.
func (e *env) fails(method string, params any, code int) string {
	e.t.Helper()
	res, perr := e.call(method, params)
	if perr == nil {
		e.t.Fatalf("%s %v: result %s, want error %d", method, params, res, code)
	}
	if perr.Code != code {
		e.t.Fatalf("%s %v: error %d %q, want code %d", method, params, perr.Code, perr.Message, code)
	}
	return perr.Message
}

func (e *env) post(body []byte) []byte {
	e.t.Helper()
	resp, err := http.Post(e.url, "application/json", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return raw
}

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Resolved
	schemasErr  error
)

// validate checks a result against results.schema.json.
func validate(t testing.TB, method string, result json.RawMessage) {
	t.Helper()
	schemasOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join("../../../conformance/skillsprotocol/testdata/results.schema.json"))
		if err != nil {
			schemasErr = err
			return
		}
		var top map[string]json.RawMessage
		if schemasErr = json.Unmarshal(raw, &top); schemasErr != nil {
			return
		}
		schemas = map[string]*jsonschema.Resolved{}
		for _, name := range sp.ToolNames() {
			var m map[string]any
			_ = json.Unmarshal(top[name], &m)
			var defs any
			_ = json.Unmarshal(top["$defs"], &defs)
			m["$defs"] = defs
			b, _ := json.Marshal(m)
			var s jsonschema.Schema
			if schemasErr = json.Unmarshal(b, &s); schemasErr != nil {
				return
			}
			if schemas[name], schemasErr = s.Resolve(nil); schemasErr != nil {
				return
			}
		}
	})
	if schemasErr != nil {
		t.Fatalf("result schemas: %v", schemasErr)
	}
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		t.Fatal(err)
	}
	if err := schemas[method].Validate(v); err != nil {
		t.Fatalf("%s result does not match its schema: %v\n%s", method, err, result)
	}
}

func requireSandbox(t testing.TB) {
	t.Helper()
	if err := sandbox.New(sandbox.Config{}).Available(); err != nil {
		t.Fatalf("these tests need the sandbox (make sandbox-deps installs bubblewrap): %v", err)
	}
}

// run is a Run as returned on the wire.
type run struct {
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
