package mcp

// Memory for answers in flight. A resources/read (or read_skill) of a big
// skill file holds its bytes several times over until the response is
// written: the bytes read, the result's text or base64, go-sdk's encoding
// of the result and of the JSON-RPC response around it, the write
// buffer. Such a read draws answerCost of the file from
// Options.AnswerBudget (in the skills process the very pool /rpc draws
// from, so both surfaces share one bound) before it reads, and gives it
// back once its HTTP response is written. It waits in arrival order up to
// Options.AnswerWait, then is refused with CodeServerBusy and
// data.retry_after_ms (and a Retry-After header where the response has
// not started). A client that reads too slowly is cut off at a write
// deadline (30 s plus one second per 256 KiB held), so it cannot hold
// its bytes for ever.
//
// The HTTP handler (holdAnswers) opens a hold per POST and names it in an
// internal header go-sdk hands to the method handler (RequestExtra):
// go-sdk runs a 2025-11-25 session's requests on the session's context,
// not the POST's, so the header is the one way from one to the other.
// Stdio and in-memory sessions have no hold and draw nothing (one client
// each, a local process).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/iii-skills/skills/server/internal/budget"
	"github.com/iii-skills/skills/server/internal/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultAnswerBudgetBytes is the pool of a server given none: the
	// bytes of answers in flight over all MCP requests, half of it per
	// client.
	DefaultAnswerBudgetBytes = 128 << 20
	// DefaultAnswerWait is how long a read waits for room.
	DefaultAnswerWait = 10 * time.Second
	// CodeServerBusy answers a read the budget has no room for now (the
	// code /rpc uses for the same refusal).
	CodeServerBusy = -32000
	// answerFactor is how many times a file's size a read holds at its
	// peak (measured: docs/benchmarks.md, make slowread).
	answerFactor = 4
	// freeAnswerBytes: files up to this size draw nothing (a published
	// skill is at most 256 KiB; most files are smaller).
	freeAnswerBytes = 256 << 10
	// holdHeader names a POST's hold; a client's own value is dropped.
	holdHeader = "X-Skills-Mcp-Hold"
	// answerWriteBase and answerWriteRate set the write deadline of a
	// response that holds budget.
	answerWriteBase = 30 * time.Second
	answerWriteRate = 256 << 10
)

// answerCost is what a read of a file of size bytes draws.
func answerCost(size int64) int64 {
	if size <= freeAnswerBytes {
		return 0
	}
	return answerFactor * size
}

// answerHold is one POST's draws on the budget, released when its
// response is written.
type answerHold struct {
	client string
	w      http.ResponseWriter
	mu     sync.Mutex
	leases []*budget.Lease
	held   int64
}

func (h *answerHold) release() {
	h.mu.Lock()
	leases := h.leases
	h.leases, h.held = nil, 0
	h.mu.Unlock()
	for _, l := range leases {
		l.Release()
	}
}

// holdAnswers opens a hold for every POST: the reads it carries draw on
// the budget through it, and it is released once next has written the
// response.
func (s *Server) holdAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(holdHeader)
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		h := &answerHold{client: budget.ClientOf(r), w: w}
		s.holds.Store(id, h)
		defer func() {
			s.holds.Delete(id)
			h.release()
		}()
		r.Header.Set(holdHeader, id)
		next.ServeHTTP(w, r)
	})
}

type holdKey struct{}

// withHold puts the hold of the POST that carried a request into ctx
// (none for stdio and in-memory sessions).
func (s *Server) withHold(ctx context.Context, extra *sdk.RequestExtra) context.Context {
	if extra == nil || extra.Header == nil {
		return ctx
	}
	if h, ok := s.holds.Load(extra.Header.Get(holdHeader)); ok {
		return context.WithValue(ctx, holdKey{}, h.(*answerHold))
	}
	return ctx
}

// reserveAnswer draws the cost of reading a file of size bytes for the
// request behind ctx, waiting up to AnswerWait.
func (s *Server) reserveAnswer(ctx context.Context, size int64) error {
	// A read that would cost more than a client's share takes the share
	// (it could never be granted more).
	n := min(answerCost(size), s.answers.Share())
	h, ok := ctx.Value(holdKey{}).(*answerHold)
	if n == 0 || !ok {
		return nil
	}
	h.mu.Lock()
	holding := h.held > 0
	h.mu.Unlock()
	// A request waits for its client's own earlier answers as long as it
	// holds nothing; holding part of the share, its wait is bounded.
	w := budget.Wait{Max: s.opts.AnswerWait, ForShare: true}
	if holding {
		w.ShareMax = s.opts.AnswerWait
	}
	l, err := s.answers.Acquire(ctx, h.client, n, w)
	if err != nil {
		var ref *budget.Refusal
		if !errors.As(err, &ref) {
			return internalError("the request ended while waiting for room for its answer: " + err.Error())
		}
		if secs := int(ref.RetryAfter.Seconds()); secs >= 1 {
			h.w.Header().Set("Retry-After", strconv.Itoa(secs))
		} else {
			h.w.Header().Set("Retry-After", "1")
		}
		data, _ := json.Marshal(map[string]int64{"retry_after_ms": ref.RetryAfter.Milliseconds()})
		return &jsonrpc.Error{Code: CodeServerBusy, Message: ref.Error(), Data: data}
	}
	h.mu.Lock()
	h.leases = append(h.leases, l)
	h.held += n
	held := h.held
	h.mu.Unlock()
	_ = http.NewResponseController(h.w).SetWriteDeadline(time.Now().Add(answerWriteBase + time.Duration(held/answerWriteRate)*time.Second))
	return nil
}

// reserveFileRead draws for an iii://<skill>/<file> read of a big folder
// file, before the registry reads it. Skill ids hold no '.', so only a
// URI whose last segment has one can name a file: other reads (skill
// bodies of at most 256 KiB, sections capped at 4 MiB, the index) are
// not looked up.
func (s *Server) reserveFileRead(ctx context.Context, uri string) error {
	rest, ok := strings.CutPrefix(uri, registry.Scheme)
	if _, held := ctx.Value(holdKey{}).(*answerHold); !ok || !held || !strings.Contains(rest[strings.LastIndexByte(rest, '/')+1:], ".") {
		return nil
	}
	for cut := strings.LastIndexByte(rest, '/'); cut > 0; cut = strings.LastIndexByte(rest[:cut], '/') {
		e, found, err := s.registry.CatalogSkill(ctx, rest[:cut])
		if err != nil || !found {
			continue
		}
		file, err := registry.DecodeFilePath(rest[cut+1:], uri)
		if err != nil {
			return nil // the registry's own verdict follows
		}
		for _, f := range e.Files {
			if f.Path == file {
				return s.reserveAnswer(ctx, f.Size)
			}
		}
		return nil
	}
	return nil
}
