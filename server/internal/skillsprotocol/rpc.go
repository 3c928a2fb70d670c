package skillsprotocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/iii-skills/skills/server/internal/budget"
)

// MaxRequestBytes caps a request body (create_blob content included).
const MaxRequestBytes = 32 << 20

// Path is where the endpoint is served by default.
const Path = "/rpc"

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

var nullID = json.RawMessage("null")

// ServeHTTP answers JSON-RPC 2.0 requests (single or batch) posted to the
// endpoint. Protocol errors are JSON-RPC errors; HTTP status is 200 for
// every answered request, 204 when only notifications were sent, 503 with
// Retry-After when a lone request found no room (CodeServerBusy; in a
// batch the header comes with the 200). The client (its address) draws
// on the shared answer budget for the body and the answers, held until
// the response is written.
func (r *Runtime) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed: the Skills Protocol endpoint takes JSON-RPC 2.0 requests by POST", http.StatusMethodNotAllowed)
		return
	}
	if msg := checkContentType(req.Header.Get("Content-Type")); msg != "" {
		http.Error(w, msg, http.StatusUnsupportedMediaType)
		return
	}
	ctx := budget.WithClient(r.observing(req.Context(), req), budget.ClientOf(req))
	ctx, hold, _ := withAnswerHold(ctx)
	defer hold.release()
	body, perr := r.readBody(ctx, w, req)
	if perr != nil {
		r.writeRefusal(w, rpcResponse{JSONRPC: "2.0", ID: nullID, Error: perr})
		return
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		items, refusal := r.splitBatch(trimmed)
		if refusal != nil {
			writeJSON(w, *refusal)
			return
		}
		answers, busy := r.batchAnswers(ctx, items)
		if len(answers) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if busy != nil {
			setRetryAfter(w, busy)
		}
		writeBatch(w, answers, hold.held())
		return
	}
	resp, reply := r.handleMessageOne(ctx, trimmed)
	if !reply {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if resp.Error != nil && resp.Error.Code == CodeServerBusy {
		r.writeRefusal(w, resp)
		return
	}
	writeAnswer(w, resp, hold.held())
}

// readBody reads a request body of at most MaxRequestBytes, its bytes
// past the first 64 KiB drawn from the answer budget: by the
// Content-Length before reading, else 1 MiB at a time while reading (a
// chunked body).
func (r *Runtime) readBody(ctx context.Context, w http.ResponseWriter, req *http.Request) ([]byte, *Error) {
	src := http.MaxBytesReader(w, req.Body, MaxRequestBytes)
	tooBig := func() *Error {
		return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("request body is larger than %d bytes", MaxRequestBytes)}
	}
	if n := req.ContentLength; n >= 0 {
		if n > MaxRequestBytes {
			return nil, tooBig()
		}
		if n > freeBodyBytes {
			if perr := r.reserve(ctx, n); perr != nil {
				return nil, perr
			}
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(src, body); err != nil {
			return nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("request body ended before its Content-Length of %d bytes: %v", n, err)}
		}
		return body, nil
	}
	const step = 1 << 20
	var buf bytes.Buffer
	for first := true; ; first = false {
		n := int64(step)
		if first {
			n = freeBodyBytes
		} else if perr := r.reserve(ctx, step); perr != nil {
			return nil, perr
		}
		n, err := io.CopyN(&buf, src, n)
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooBig()
			}
			return nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("read the request body: %v", err)}
		}
	}
}

// writeRefusal answers a lone request refused before it was run: 503 with
// Retry-After when the server was busy, else 200 with the error.
func (r *Runtime) writeRefusal(w http.ResponseWriter, resp rpcResponse) {
	if resp.Error.Code == CodeServerBusy {
		setRetryAfter(w, resp.Error)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(mustJSON(resp))
		return
	}
	writeJSON(w, resp)
}

// setRetryAfter sets the Retry-After header (whole seconds, at least 1)
// of a CodeServerBusy error.
func setRetryAfter(w http.ResponseWriter, e *Error) {
	ms := int64(1000)
	if d, ok := e.Data.(map[string]any); ok {
		if v, ok := d["retry_after_ms"].(int64); ok && v > 0 {
			ms = v
		}
	}
	w.Header().Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
}

// checkContentType returns why a request's Content-Type is refused, or "".
// Only JSON is taken: a web page on any origin may POST text/plain,
// application/x-www-form-urlencoded or multipart/form-data (or a body
// with no type at all) without a CORS preflight, and so could drive /rpc
// from the user's browser; application/json needs a preflight, which the
// Origin check then refuses.
func checkContentType(ct string) string {
	const want = "send the JSON-RPC request with Content-Type: application/json"
	if strings.TrimSpace(ct) == "" {
		return "Unsupported Media Type: no Content-Type; " + want
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Sprintf("Unsupported Media Type: Content-Type %q is not a media type; %s", ct, want)
	}
	if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return ""
	}
	return fmt.Sprintf("Unsupported Media Type: %s is not accepted (a browser sends it cross-origin without a preflight); %s", mt, want)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// HandleMessage answers one JSON-RPC message (a request, a notification
// or a batch). ok is false when nothing is to be sent back (notifications
// only). The bytes of its answers are drawn from the answer budget
// (client budget.ClientFrom(ctx)) until it returns.
func (r *Runtime) HandleMessage(ctx context.Context, body []byte) (out []byte, ok bool) {
	ctx, hold, made := withAnswerHold(ctx)
	if made {
		defer hold.release()
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		items, refusal := r.splitBatch(trimmed)
		if refusal != nil {
			return mustJSON(*refusal), true
		}
		answers, _ := r.batchAnswers(ctx, items)
		if len(answers) == 0 {
			return nil, false
		}
		var buf bytes.Buffer
		writeBatchTo(&buf, answers)
		return buf.Bytes(), true
	}
	resp, reply := r.handleMessageOne(ctx, trimmed)
	if !reply {
		return nil, false
	}
	return mustJSON(resp), true
}

// handleMessageOne answers a message that is not a batch.
func (r *Runtime) handleMessageOne(ctx context.Context, trimmed []byte) (rpcResponse, bool) {
	if !json.Valid(trimmed) {
		var v any
		return parseError(json.Unmarshal(trimmed, &v)), true
	}
	return r.handleOne(ctx, trimmed)
}

// splitBatch returns the requests of a batch, reading at most
// MaxBatchRequests of them: a 32 MiB body of ten million "{}" must not
// become ten million slices before it is refused.
func (r *Runtime) splitBatch(body []byte) ([]json.RawMessage, *rpcResponse) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '['
		resp := parseError(err)
		return nil, &resp
	}
	var items []json.RawMessage
	for dec.More() {
		if len(items) == r.opts.MaxBatchRequests {
			return nil, &rpcResponse{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeInvalidRequest,
				Message: fmt.Sprintf("batch of more than %d requests; a batch holds at most %d (send the rest in another batch)", r.opts.MaxBatchRequests, r.opts.MaxBatchRequests)}}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			resp := parseError(err)
			return nil, &resp
		}
		items = append(items, raw)
	}
	if _, err := dec.Token(); err != nil { // ']'
		resp := parseError(err)
		return nil, &resp
	}
	if dec.InputOffset() != int64(len(body)) {
		resp := parseError(fmt.Errorf("invalid character after the batch's closing ] at offset %d", dec.InputOffset()))
		return nil, &resp
	}
	if len(items) == 0 {
		return nil, &rpcResponse{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeInvalidRequest, Message: "empty batch: send at least one request"}}
	}
	return items, nil
}

// batchAnswers answers a batch's requests in order. Their answers
// together stay under MaxBatchResponseBytes: once an answer would pass
// it, that request and every later one are answered with an error
// instead (the later ones are not run), so a few small requests cannot
// make the server build a response of hundreds of megabytes. busy is the
// first CodeServerBusy answer, if any.
func (r *Runtime) batchAnswers(ctx context.Context, items []json.RawMessage) (answers []json.RawMessage, busy *Error) {
	limit := r.opts.MaxBatchResponseBytes
	total, full := 2, false // the brackets
	for _, it := range items {
		if full {
			if resp, reply := batchFull(it, limit); reply {
				answers = append(answers, mustJSON(resp))
			}
			continue
		}
		resp, reply := r.handleOne(ctx, it)
		if !reply {
			continue
		}
		if resp.Error != nil && resp.Error.Code == CodeServerBusy && busy == nil {
			busy = resp.Error
		}
		b := mustJSON(resp)
		if total+len(b)+1 > limit {
			full = true
			b = mustJSON(rpcResponse{JSONRPC: "2.0", ID: resp.ID, Error: batchFullError(limit)})
		}
		total += len(b) + 1
		answers = append(answers, b)
	}
	return answers, busy
}

// writeBatch writes a batch's answers to w one after the other (no joined
// copy of them all), under a write deadline for size bytes.
func writeBatch(w http.ResponseWriter, answers []json.RawMessage, size int64) {
	deadline(w, size)
	w.Header().Set("Content-Type", "application/json")
	writeBatchTo(&errWriter{w: w}, answers)
}

func writeBatchTo(w io.Writer, answers []json.RawMessage) {
	_, _ = io.WriteString(w, "[")
	for i, a := range answers {
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		_, _ = w.Write(a)
	}
	_, _ = io.WriteString(w, "]")
}

func batchFullError(limit int) *Error {
	return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("batch response too large: the answers of this batch would pass %d bytes, so this request was not answered (and later ones were not run); send it again on its own or read large blobs in parts (read_blob max_bytes)", limit)}
}

// batchFull answers a request that comes after the batch's answers
// reached their cap, without running it (notifications get nothing).
func batchFull(raw json.RawMessage, limit int) (rpcResponse, bool) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &req) != nil {
		return rpcResponse{JSONRPC: "2.0", ID: nullID, Error: batchFullError(limit)}, true
	}
	if len(req.ID) == 0 {
		return rpcResponse{}, false // a notification
	}
	id := req.ID
	if !validID(id) {
		id = nullID
	}
	return rpcResponse{JSONRPC: "2.0", ID: id, Error: batchFullError(limit)}, true
}

func parseError(err error) rpcResponse {
	msg := "parse error: the body is not valid JSON"
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return rpcResponse{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeParseError, Message: msg}}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(rpcResponse{JSONRPC: "2.0", ID: nullID, Error: internalError("encode the response: %v", err)})
	}
	return b
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"', 'n':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// handleOne answers one request object; reply is false for a notification.
func (r *Runtime) handleOne(ctx context.Context, raw json.RawMessage) (rpcResponse, bool) {
	invalid := func(msg string) (rpcResponse, bool) {
		return rpcResponse{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: CodeInvalidRequest, Message: "invalid request: " + msg}}, true
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return invalid("expected a JSON object {\"jsonrpc\":\"2.0\",\"method\":…,\"params\":{…},\"id\":…}")
	}
	var req rpcRequest
	if err := json.Unmarshal(t, &req); err != nil {
		return invalid(err.Error())
	}
	// RawMessage receives "null" for "id": null, nothing when there is no
	// "id": no second decoding of the whole request to tell them apart.
	hasID := len(req.ID) > 0
	if !validID(req.ID) {
		return invalid("id must be a string, a number or null")
	}
	id := req.ID
	if !hasID || len(id) == 0 {
		id = nullID
	}
	if req.JSONRPC != "2.0" {
		return rpcResponse{JSONRPC: "2.0", ID: id, Error: &Error{Code: CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}}, true
	}
	if req.Method == nil {
		return rpcResponse{JSONRPC: "2.0", ID: id, Error: &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must be a string (a tool name such as list_skills)`}}, true
	}
	result, perr := r.observedCall(ctx, *req.Method, req.Params)
	if !hasID {
		return rpcResponse{}, false
	}
	if perr != nil {
		return rpcResponse{JSONRPC: "2.0", ID: id, Error: perr}, true
	}
	return rpcResponse{JSONRPC: "2.0", ID: id, Result: result}, true
}

// Call runs one tool with its params (a JSON object, or empty). Its
// errors name no host path (hidePaths); the full text is logged. Outside
// a request (ServeHTTP, HandleMessage) the bytes its answer draws from
// the answer budget are given back when it returns.
func (r *Runtime) Call(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
	ctx, hold, made := withAnswerHold(ctx)
	if made {
		defer hold.release()
	}
	result, perr := r.call(ctx, method, params)
	if perr != nil {
		if msg := hidePaths(perr.Message); msg != perr.Message {
			r.log.Warn("skills protocol: error answered without its host paths", "method", method, "err", perr.Message)
			perr = &Error{Code: perr.Code, Message: msg, Data: perr.Data}
		}
	}
	return result, perr
}

func (r *Runtime) call(ctx context.Context, method string, params json.RawMessage) (any, *Error) {
	switch method {
	case "list_skills":
		var p listParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.listSkills(p)
	case "describe_skill":
		var p describeParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.describeSkill(ctx, p)
	case "read_skill_file":
		var p readFileParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.readSkillFile(ctx, p)
	case "execute_skill":
		var p executeParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.executeSkill(ctx, p)
	case "run_code":
		var p runCodeParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.runCode(ctx, p)
	case "create_blob":
		var p createBlobParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.createBlob(ctx, p)
	case "read_blob":
		var p readBlobParams
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return r.readBlob(ctx, p)
	case "load_skills_protocol_guide":
		var p struct{}
		if e := decodeParams(method, params, &p); e != nil {
			return nil, e
		}
		return map[string]any{"content": GuideContent()}, nil
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q is not a Skills Protocol tool (expected one of: %s)", method, strings.Join(ToolNames(), ", "))}
}

// decodeParams decodes params (an object; absent or null means {}) into
// dst, refusing unknown keys and wrongly typed values with -32602.
func decodeParams(method string, params json.RawMessage, dst any) *Error {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		t = []byte("{}")
	}
	if t[0] != '{' {
		return invalidParams("params of %s must be an object", method)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return invalidParams("%s: parameter %q must be %s, got %s", method, typeErr.Field, jsonType(typeErr.Type.String()), typeErr.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return invalidParams("%s: unknown parameter %s (expected: %s)", method, field, strings.Join(paramNames(method), ", "))
		default:
			return invalidParams("%s: %v", method, err)
		}
	}
	return nil
}

func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "string") && strings.HasPrefix(goType, "[]"):
		return "an array of strings"
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "struct"), strings.HasPrefix(goType, "*struct"):
		return "an object"
	}
	return goType
}

func paramNames(method string) []string {
	for _, t := range Tools() {
		if t.Name == method {
			props, _ := t.Parameters["properties"].(map[string]any)
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			sort.Strings(names)
			return names
		}
	}
	return nil
}
