package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// go-sdk v1.8 checks every incoming method against a fixed table and has no
// hook for extension methods, so skills/list, skills/get and
// resources/directory/read are answered in front of it: at the HTTP layer
// (one POST carries one JSON-RPC message) and by wrapping the connection of
// stream transports (stdio, in-memory). Everything else reaches the SDK
// untouched. The alternative, a fork of go-sdk or a second JSON-RPC server,
// would duplicate the session, header and version handling the SDK does.

// maxInterceptBody bounds the POST bodies inspected for extension methods
// (they are tiny; larger bodies are passed to the SDK, which applies its own
// limit).
const maxInterceptBody = 1 << 20

// interceptHTTP answers extension requests arriving over Streamable HTTP.
func (s *Server) interceptHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || s.backend == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxInterceptBody+1))
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > maxInterceptBody {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			next.ServeHTTP(w, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok || !req.IsCall() || !extensionMethod(req.Method) {
			next.ServeHTTP(w, r)
			return
		}
		// A 2025-11-25 request belongs to a live session, as the SDK requires
		// of every request after initialize.
		if r.Header.Get("Mcp-Protocol-Version") < StatelessProtocolVersion {
			if !s.liveSession(r.Header.Get(sessionHeader)) {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		} else if m := r.Header.Get("Mcp-Method"); m != "" && m != req.Method {
			writeRPC(w, http.StatusBadRequest, req.ID, nil, &jsonrpc.Error{Code: -32020,
				Message: "Mcp-Method header " + m + " does not match the request method " + req.Method})
			return
		}
		res, err := s.answerExtension(r.Context(), req.Method, req.Params, r.Header.Get("Mcp-Protocol-Version") >= StatelessProtocolVersion)
		writeRPC(w, http.StatusOK, req.ID, res, err)
	})
}

func (s *Server) liveSession(id string) bool {
	if id == "" {
		return false
	}
	for ss := range s.sdk.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// writeRPC writes one JSON-RPC response as application/json. A result is
// encoded once and framed by hand: jsonrpc.EncodeMessage would compact the
// (already compact) result a second time, which doubles the cost of a
// 1000-entry skills/list page.
func writeRPC(w http.ResponseWriter, status int, id jsonrpc.ID, result any, err error) {
	var b []byte
	var encErr error
	if err == nil {
		b, encErr = frameResult(id, result)
	}
	if err != nil || encErr != nil {
		b, encErr = encodeResponse(id, nil, cmpErr(err, encErr))
	}
	if encErr != nil {
		http.Error(w, encErr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func cmpErr(err, encErr error) error {
	if err != nil {
		return err
	}
	return encErr
}

// frameResult is {"jsonrpc":"2.0","id":…,"result":…}.
func frameResult(id jsonrpc.ID, result any) ([]byte, error) {
	idJSON, err := json.Marshal(id.Raw())
	if err != nil {
		return nil, err
	}
	res, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(res)+len(idJSON)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, idJSON...)
	b = append(b, `,"result":`...)
	b = append(b, res...)
	return append(b, '}'), nil
}

func encodeResponse(id jsonrpc.ID, result any, err error) ([]byte, error) {
	return jsonrpc.EncodeMessage(rpcResponse(id, result, err))
}

// rpcResponse is the JSON-RPC response carrying result or err.
func rpcResponse(id jsonrpc.ID, result any, err error) *jsonrpc.Response {
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		raw, mErr := json.Marshal(result)
		if mErr == nil {
			resp.Result = raw
			return resp
		}
		err = mErr
	}
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	resp.Error = rpc
	return resp
}

// extensionTransport wraps a stream transport (stdio, in-memory) so that
// extension requests are answered on its connection.
type extensionTransport struct {
	s     *Server
	inner sdk.Transport
}

// Transport wraps t so that the Skills extension methods are answered on
// it; Connect the SDK server (SDK()) to the result. ServeStdio does this.
func (s *Server) Transport(t sdk.Transport) sdk.Transport {
	if s.backend == nil {
		return t
	}
	return &extensionTransport{s: s, inner: t}
}

func (t *extensionTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &extensionConn{Connection: c, s: t.s}, nil
}

// SupportsProtocolVersion forwards the inner transport's answer, so the
// versions advertised by server/discover do not change.
func (t *extensionTransport) SupportsProtocolVersion(v string) bool {
	if ps, ok := t.inner.(sdk.ProtocolVersionSupporter); ok {
		return ps.SupportsProtocolVersion(v)
	}
	return true
}

type extensionConn struct {
	sdk.Connection
	s  *Server
	wg sync.WaitGroup
	// initialize is set once the client's initialize request has passed:
	// before it, a 2025-11-25 session answers nothing but initialize.
	initialize atomic.Bool
}

// errDuringInitialization is go-sdk's answer (v1.8, ServerSession.handle)
// to a request other than initialize that comes first on a session: a
// plain error, so code 0.
func errDuringInitialization(method string) error {
	return &jsonrpc.Error{Message: fmt.Sprintf("method %q is invalid during session initialization", method)}
}

// Read passes every message on except extension requests, which are
// answered concurrently (Connection.Write may be called concurrently).
func (c *extensionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if ok && req.Method == "initialize" {
			c.initialize.Store(true)
		}
		if !ok || !req.IsCall() || !extensionMethod(req.Method) {
			return msg, nil
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			var res any
			var err error
			if newProto := newProtocol(req.Params); !newProto && !c.initialize.Load() {
				err = errDuringInitialization(req.Method)
			} else {
				res, err = c.s.answerExtension(ctx, req.Method, req.Params, newProto)
			}
			resp := rpcResponse(req.ID, res, err)
			if err := c.Connection.Write(context.WithoutCancel(ctx), resp); err != nil {
				c.s.log.Debug("MCP: writing a skills extension response failed", "method", req.Method, "err", err)
			}
		}()
	}
}

func (c *extensionConn) Close() error {
	err := c.Connection.Close()
	c.wg.Wait()
	return err
}

// quietPrime drops the event name of go-sdk's SSE priming event: the
// 2025-11-25 transport opens each stream with an event that carries an id
// and empty data, which go-sdk names "prime"; the official Python client
// logs "Unknown SSE event: prime" for it on every request. Unnamed, it is
// the default "message" event with empty data, which every client skips,
// and its id still makes the stream resumable (Last-Event-ID).
func quietPrime(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&primeWriter{ResponseWriter: w}, r)
	})
}

type primeWriter struct{ http.ResponseWriter }

var primeLine = []byte("event: prime\n")

// Write strips the name of a priming event (go-sdk writes each event in
// one Write).
func (p *primeWriter) Write(b []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(b, primeLine); ok {
		n, err := p.ResponseWriter.Write(rest)
		if n == len(rest) {
			n = len(b)
		}
		return n, err
	}
	return p.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (p *primeWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
