package skillsprotocol

// Memory for requests and answers in flight, over all requests: each
// request takes its body's bytes and its big answer's bytes from one
// shared budget (Options.AnswerBudget, which MCP can share) before it
// holds them, and gives them back once its response is written. Big
// answers (read_skill_file, read_blob) are written to the response piece
// by piece from the content they hold, never encoded into another whole
// copy first; a client that reads too slowly is cut off at a write
// deadline, so it cannot hold its bytes for ever.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/iii-skills/skills/server/internal/budget"
)

// Defaults of the answer budget.
const (
	// DefaultAnswerBudgetBytes bounds the bytes of request bodies and big
	// answers held at once over all /rpc requests; one client (address)
	// may hold half of it.
	DefaultAnswerBudgetBytes = 128 << 20
	// DefaultAnswerWait is how long a request waits for room in the
	// budget before it is answered CodeServerBusy with a Retry-After.
	DefaultAnswerWait = 10 * time.Second
	// freeBodyBytes of a request body are not drawn from the budget (a
	// JSON-RPC call is a few hundred bytes): a request waiting for room
	// for its answer then holds nothing.
	freeBodyBytes = 64 << 10
	// answerWriteBase and answerWriteRate set a response's write
	// deadline: 30 s, plus one second per 256 KiB it holds.
	answerWriteBase = 30 * time.Second
	answerWriteRate = 256 << 10
)

// CodeServerBusy answers a request the server has no room for now (the
// answer budget, a client's share of sandboxes); data.retry_after_ms
// (and the HTTP Retry-After header) say when to try again.
const CodeServerBusy = -32000

// NewAnswerBudget is the default shared budget of bytes in flight: capacity
// bytes, half of it per client.
func NewAnswerBudget(capacity int64) *budget.Pool {
	return budget.New("bytes of requests and answers in flight", capacity, capacity/2)
}

// busyError turns a budget refusal into CodeServerBusy.
func busyError(err error) *Error {
	var ref *budget.Refusal
	if !errors.As(err, &ref) {
		return internalError("the request ended while waiting for room: %v", err)
	}
	return &Error{Code: CodeServerBusy, Message: ref.Error(),
		Data: map[string]any{"retry_after_ms": ref.RetryAfter.Milliseconds()}}
}

// answerHold collects the leases of one request, released together once
// its response is written.
type answerHold struct {
	mu     sync.Mutex
	leases []*budget.Lease
	bytes  int64
	// refused: the request was refused room once; its later answers (in
	// a batch) are refused at once rather than each after a wait.
	refused bool
}

type holdKey struct{}

// withAnswerHold gives ctx a hold, unless it has one (ok false: the
// caller that made it releases it).
func withAnswerHold(ctx context.Context) (_ context.Context, h *answerHold, made bool) {
	if h, ok := ctx.Value(holdKey{}).(*answerHold); ok {
		return ctx, h, false
	}
	h = &answerHold{}
	return context.WithValue(ctx, holdKey{}, h), h, true
}

func (h *answerHold) add(l *budget.Lease) {
	h.mu.Lock()
	h.leases = append(h.leases, l)
	h.bytes += l.N()
	h.mu.Unlock()
}

func (h *answerHold) held() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}

func (h *answerHold) wasRefused() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

func (h *answerHold) release() {
	h.mu.Lock()
	leases := h.leases
	h.leases, h.bytes = nil, 0
	h.mu.Unlock()
	for _, l := range leases {
		l.Release()
	}
}

// reserve takes n bytes of the answer budget for the request behind ctx
// (its client from budget.ClientFrom), waiting up to AnswerWait; they are
// held until the request's response is written.
func (r *Runtime) reserve(ctx context.Context, n int64) *Error {
	if n <= 0 {
		return nil
	}
	h, ok := ctx.Value(holdKey{}).(*answerHold)
	if !ok {
		return nil // not a request: Call made no hold (cannot happen)
	}
	// A request waits for its client's own earlier answers as long as it
	// holds nothing; holding part of the share, its wait is bounded, so
	// a client's requests cannot wait on one another for ever.
	w := budget.Wait{Max: r.opts.AnswerWait, ForShare: true}
	if h.held() > 0 {
		w.ShareMax = r.opts.AnswerWait
	}
	var l *budget.Lease
	var err error
	if h.wasRefused() {
		l, err = r.answers.TryAcquire(budget.ClientFrom(ctx), n)
	} else {
		l, err = r.answers.Acquire(ctx, budget.ClientFrom(ctx), n, w)
	}
	if err != nil {
		h.mu.Lock()
		h.refused = true
		h.mu.Unlock()
		return busyError(err)
	}
	h.add(l)
	return nil
}

// bigResult is an answer with one big string field, "content": written
// to a response piece by piece (writeJSON) from the bytes it holds, and
// encoded as a whole only inside a batch (MarshalJSON). Fields are
// written in the order encoding/json writes a map's keys, so the bytes
// are those a map[string]any gave.
type bigResult struct {
	fields map[string]any
	text   string // utf-8 content, or
	bin    []byte // content: utf-8 text, or base64-encoded when b64
	b64    bool
}

func (b *bigResult) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := b.writeJSON(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// chunk is how much content is escaped at a time.
const chunk = 64 << 10

func (b *bigResult) writeJSON(w io.Writer) error {
	keys := make([]string, 0, len(b.fields)+1)
	for k := range b.fields {
		keys = append(keys, k)
	}
	keys = append(keys, "content")
	slices.Sort(keys)
	if _, err := io.WriteString(w, "{"); err != nil {
		return err
	}
	for i, k := range keys {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		kb, _ := json.Marshal(k)
		if _, err := w.Write(append(kb, ':')); err != nil {
			return err
		}
		var err error
		if k == "content" {
			err = b.writeContent(w)
		} else {
			var vb []byte
			if vb, err = json.Marshal(b.fields[k]); err == nil {
				_, err = w.Write(vb)
			}
		}
		if err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "}")
	return err
}

// writeContent writes the content as a JSON string: base64 through a
// streaming encoder, text escaped 64 KiB at a time (cut between runes,
// so the pieces escape as the whole would).
func (b *bigResult) writeContent(w io.Writer) error {
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	if b.b64 {
		enc := base64.NewEncoder(base64.StdEncoding, w)
		for rest := b.bin; len(rest) > 0; {
			n := min(chunk, len(rest))
			if _, err := enc.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		if err := enc.Close(); err != nil {
			return err
		}
	} else if b.bin != nil {
		for raw := b.bin; len(raw) > 0; {
			n := cut(len(raw), func(i int) bool { return utf8.RuneStart(raw[i]) })
			if err := writeEscaped(w, string(raw[:n])); err != nil {
				return err
			}
			raw = raw[n:]
		}
	} else {
		for rest := b.text; len(rest) > 0; {
			n := cut(len(rest), func(i int) bool { return utf8.RuneStart(rest[i]) })
			if err := writeEscaped(w, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
	}
	_, err := io.WriteString(w, `"`)
	return err
}

// writeEscaped writes s as the inside of a JSON string.
func writeEscaped(w io.Writer, s string) error {
	e, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(e[1 : len(e)-1])
	return err
}

// cut is where a piece of at most chunk bytes of a length-n content ends:
// at a rune start (runeStart(i)), at most 3 bytes before the chunk's end.
func cut(n int, runeStart func(int) bool) int {
	if n <= chunk {
		return n
	}
	end := chunk
	for back := 0; back < utf8.UTFMax-1 && end > 1 && !runeStart(end); back++ {
		end--
	}
	return end
}

// writeAnswer writes one response (not a batch) to w, a big result piece
// by piece, under a write deadline that grows with its size.
func writeAnswer(w http.ResponseWriter, resp rpcResponse, size int64) {
	deadline(w, size)
	w.Header().Set("Content-Type", "application/json")
	big, ok := resp.Result.(*bigResult)
	if !ok {
		_, _ = w.Write(mustJSON(resp))
		return
	}
	// rpcResponse's field order: jsonrpc, result, id.
	bw := &errWriter{w: w}
	_, _ = io.WriteString(bw, `{"jsonrpc":"2.0","result":`)
	if bw.err == nil {
		bw.err = big.writeJSON(bw)
	}
	_, _ = fmt.Fprintf(bw, `,"id":%s}`, resp.ID)
}

// deadline sets w's write deadline for a response holding size bytes: a
// client that reads slower than 256 KiB/s (after 30 s) is cut off, and
// the bytes its answer holds go back to the budget.
func deadline(w http.ResponseWriter, size int64) {
	d := answerWriteBase + time.Duration(size/answerWriteRate)*time.Second
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// errWriter stops writing after the first error (a client gone, a
// deadline passed).
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
