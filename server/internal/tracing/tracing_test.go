package tracing_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/engine"
	"github.com/iii-skills/skills/server/internal/surface"
	"github.com/iii-skills/skills/server/internal/tracing"
)

// A caller's W3C trace context: trace 4bf9…, its span 00f0…, sampled.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	callerTP    = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// exported is what an OTLP receiver got: spans and their resources'
// service names.
type exported struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (e *exported) add(req *coltracepb.ExportTraceServiceRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				e.services = append(e.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			e.spans = append(e.spans, ss.GetSpans()...)
		}
	}
}

func (e *exported) all() []*tracepb.Span {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*tracepb.Span(nil), e.spans...)
}

// otlpHTTP is an OTLP/HTTP receiver built on the official protobuf
// definitions (go.opentelemetry.io/proto/otlp): POST /v1/traces.
func otlpHTTP(t *testing.T) (*exported, string) {
	got := &exported{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP/HTTP request %s %s (%s); want POST /v1/traces of protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusNotFound)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Errorf("export is not an ExportTraceServiceRequest: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Header.Get("X-Api-Key") != "k-123" {
			t.Errorf("configured header missing: %v", r.Header)
		}
		got.add(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return got, srv.URL
}

// grpcReceiver is an OTLP/gRPC receiver: the TraceService of the official
// definitions on a real gRPC server.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	got *exported
}

func (g *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.got.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func otlpGRPC(t *testing.T) (*exported, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := &exported{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, &grpcReceiver{got: got})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return got, "http://" + ln.Addr().String()
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// A call's span continues the caller's trace, as child of the caller's
// span; the calls it makes continue it under the call's span; a call
// without a caller's context starts a trace; a refusal is an error span.
// Over both OTLP protocols, to real receivers.
func TestSpansContinueTheCallersTrace(t *testing.T) {
	for _, proto := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			var got *exported
			var endpoint string
			if proto == tracing.ProtocolHTTP {
				got, endpoint = otlpHTTP(t)
			} else {
				got, endpoint = otlpGRPC(t)
			}
			tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: endpoint, Protocol: proto,
				Headers: map[string]string{"X-Api-Key": "k-123"}})
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Enabled() {
				t.Fatal("a tracer with an endpoint is not enabled")
			}
			ctx, call := tr.StartCall(context.Background(), rules.FnSkillFetch, surface.MCP,
				tracing.TraceContext{Traceparent: callerTP, Baggage: "tenant=acme"})
			out := tr.Outgoing(ctx)
			call.End("ok", nil)

			_, root := tr.StartCall(context.Background(), rules.FnSkillsList, surface.III, tracing.TraceContext{})
			root.End("", nil)
			_, refused := tr.StartCall(context.Background(), rules.FnSkillsRegister, surface.RPC, tracing.TraceContext{Traceparent: "garbage"})
			refused.End(rules.CodeForbidden, errForbidden)

			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown (flushes the batch): %v", err)
			}
			spans := got.all()
			if len(spans) != 3 {
				t.Fatalf("the receiver got %d spans; want 3", len(spans))
			}
			byName := map[string]*tracepb.Span{}
			for _, s := range spans {
				byName[s.GetName()] = s
			}
			fetch := byName[rules.FnSkillFetch]
			if fetch == nil || hex.EncodeToString(fetch.GetTraceId()) != callerTrace || hex.EncodeToString(fetch.GetParentSpanId()) != callerSpan {
				t.Fatalf("fetch span %v; want trace %s with parent %s", fetch, callerTrace, callerSpan)
			}
			if fetch.GetKind() != tracepb.Span_SPAN_KIND_SERVER || attr(fetch, "rpc.method") != rules.FnSkillFetch ||
				attr(fetch, "skills.surface") != "mcp" || attr(fetch, "rpc.system") != "iii" {
				t.Fatalf("fetch span kind %v attributes %v", fetch.GetKind(), fetch.GetAttributes())
			}
			wantOut := "00-" + callerTrace + "-" + hex.EncodeToString(fetch.GetSpanId()) + "-01"
			if out.Traceparent != wantOut || out.Baggage != "tenant=acme" {
				t.Fatalf("outgoing context %+v; want traceparent %s and the caller's baggage", out, wantOut)
			}
			list := byName[rules.FnSkillsList]
			if list == nil || len(list.GetParentSpanId()) != 0 || hex.EncodeToString(list.GetTraceId()) == callerTrace {
				t.Fatalf("a call without a trace context: %v; want a new root span", list)
			}
			reg := byName[rules.FnSkillsRegister]
			if reg == nil || len(reg.GetParentSpanId()) != 0 || reg.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR ||
				attr(reg, "skills.code") != rules.CodeForbidden || !strings.Contains(reg.GetStatus().GetMessage(), "not yours") {
				t.Fatalf("refused call span %v; want a root error span with its code", reg)
			}
			if len(got.services) == 0 || got.services[0] != tracing.DefaultServiceName {
				t.Fatalf("service names %v", got.services)
			}
		})
	}
}

var errForbidden = &refusal{"skill a/b is not yours"}

type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// A caller that did not sample its trace is followed: nothing is
// exported, and the calls made carry the trace on, unsampled.
func TestUnsampledCallerIsFollowed(t *testing.T) {
	got, endpoint := otlpHTTP(t)
	tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: endpoint, Headers: map[string]string{"X-Api-Key": "k-123"}})
	if err != nil {
		t.Fatal(err)
	}
	unsampled := "00-" + callerTrace + "-" + callerSpan + "-00"
	ctx, call := tr.StartCall(context.Background(), rules.FnSkillFetch, surface.III, tracing.TraceContext{Traceparent: unsampled})
	out := tr.Outgoing(ctx)
	call.End("ok", nil)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(got.all()); n != 0 {
		t.Fatalf("%d spans exported for an unsampled caller", n)
	}
	if !strings.HasPrefix(out.Traceparent, "00-"+callerTrace+"-") || !strings.HasSuffix(out.Traceparent, "-00") {
		t.Fatalf("outgoing %q; want the caller's trace, unsampled", out.Traceparent)
	}
}

// Off (the default) records nothing and hands the caller's context on as
// it came.
func TestOffCarriesTheContextThrough(t *testing.T) {
	tr, err := tracing.New(context.Background(), tracing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("the zero Config is enabled")
	}
	ctx, call := tr.StartCall(context.Background(), rules.FnSkillFetch, surface.III, tracing.TraceContext{Traceparent: callerTP, Baggage: "k=v"})
	defer call.End("ok", nil)
	if out := tr.Outgoing(ctx); out.Traceparent != callerTP || out.Baggage != "k=v" {
		t.Fatalf("outgoing %+v; want the caller's context unchanged", out)
	}
	if call.Span().IsRecording() {
		t.Fatal("a span records with tracing off")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  tracing.Config
		want string
	}{
		{tracing.Config{Endpoint: "localhost:4318"}, "not an http or https URL"},
		{tracing.Config{Endpoint: "ftp://collector"}, "not an http or https URL"},
		{tracing.Config{Endpoint: "http://u:p@collector:4318"}, "without credentials"},
		{tracing.Config{Endpoint: "http://collector:4318", Protocol: "thrift"}, `protocol "thrift"`},
		{tracing.Config{Endpoint: "http://collector:4317/x", Protocol: tracing.ProtocolGRPC}, "no path"},
		{tracing.Config{Endpoint: "http://collector:4318", SampleRatio: 2}, "sample_ratio"},
		{tracing.Config{Headers: map[string]string{"a": "b"}}, "without an endpoint"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v; want an error saying %q", c.cfg, err, c.want)
		}
		if _, err := tracing.New(context.Background(), c.cfg); err == nil {
			t.Errorf("New(%+v) accepted it", c.cfg)
		}
		if strings.Contains(c.cfg.Endpoint, "u:p@") && err != nil && strings.Contains(err.Error(), "u:p@") {
			t.Errorf("the error repeats the password: %v", err)
		}
	}
	if err := (tracing.Config{Endpoint: "https://collector.example:4318/otlp", SampleRatio: 0.1}).Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
}

// Over the real embedded engine: a caller's iii client sends a traceparent
// with its call (as the official SDKs do), the engine passes it on, and the
// registry-side handler's span is a child of the caller's span.
func TestInvocationOverTheEngineJoinsTheCallersTrace(t *testing.T) {
	got, endpoint := otlpHTTP(t)
	tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: endpoint, Headers: map[string]string{"X-Api-Key": "k-123"}})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(engine.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const fn = "demo::traced"
	worker := iii.New(e.URL(), iii.WithName("traced-worker"), iii.WithLogger(quiet))
	if _, err := worker.RegisterFunction(fn, func(ctx context.Context, _ json.RawMessage) (any, error) {
		_, call := tr.StartCall(ctx, fn, surface.III, tracing.FromInvocation(ctx))
		call.End("ok", nil)
		return map[string]bool{"ok": true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := worker.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	caller := iii.New(e.URL(), iii.WithName("caller"), iii.WithLogger(quiet))
	if err := caller.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	var out json.RawMessage
	for { // the function may not be routed for an instant after Connect
		out, err = caller.Trigger(ctx, iii.TriggerRequest{FunctionID: fn, Data: json.RawMessage(`{}`), Traceparent: callerTP})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !bytes.Contains(out, []byte(`"ok":true`)) {
		t.Fatalf("call: %s %v", out, err)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := got.all()
	if len(spans) != 1 || hex.EncodeToString(spans[0].GetTraceId()) != callerTrace || hex.EncodeToString(spans[0].GetParentSpanId()) != callerSpan {
		t.Fatalf("spans %v; want one in trace %s under the caller's span %s", spans, callerTrace, callerSpan)
	}
}
