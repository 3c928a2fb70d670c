package engine

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/sdk-go/wire"
)

// queueSet implements the enqueue action in-process: each named queue is a
// FIFO drained by one goroutine that invokes the jobs one at a time. Jobs
// live in memory only and are not retried; a job's result is discarded (its
// failure is logged). This stands in for the real engine's queue worker so
// that TriggerAction.Enqueue works against the embedded engine.
type queueSet struct {
	e      *Engine
	mu     sync.Mutex
	queues map[string]*jobQueue
	wg     sync.WaitGroup
	closed bool
}

type jobQueue struct {
	jobs    []job
	running bool
}

type job struct {
	receipt    string
	functionID string
	data       json.RawMessage
	metadata   json.RawMessage
	// from is who enqueued the job: the job runs as that connection
	// (invokeAs), so a scoped token cannot shed its scope by queueing a
	// call, and counts against its budget (Config.MaxInFlightPerConn,
	// MaxCallerBytes) until it ran; nil for the engine's own jobs.
	from *conn
	size int64
	fn   func() // engine work (trigger fires) instead of a function call
}

func newQueueSet(e *Engine) *queueSet {
	return &queueSet{e: e, queues: make(map[string]*jobQueue)}
}

// enqueue handles an invokefunction with action enqueue from worker c.
func (e *Engine) enqueue(c *conn, m *wire.Message) {
	reply := func(frame []byte) {
		if m.InvocationID != "" {
			c.send(frame)
		}
	}
	e.mu.RLock()
	_, known := e.functions[m.FunctionID]
	e.mu.RUnlock()
	if !known && e.builtins[m.FunctionID] == nil {
		reply(encodeError(m.InvocationID, m.FunctionID, wire.CodeFunctionNotFound, fmt.Sprintf("Function %s not found", m.FunctionID)))
		return
	}
	if why := c.forbiddenCall(m.FunctionID); why != "" {
		reply(encodeError(m.InvocationID, m.FunctionID, rules.CodeForbidden, why))
		return
	}
	if m.Action.Queue == "" {
		reply(encodeError(m.InvocationID, m.FunctionID, wire.CodeEnqueueError, "enqueue action needs a non-empty `queue` name"))
		return
	}
	j := job{receipt: uuid.NewString(), functionID: m.FunctionID, data: m.Data, metadata: m.Metadata, from: c,
		size: invocationSize(m.Data, m.Metadata)}
	if why := e.admitJob(c, j.size); why != "" {
		reply(encodeError(m.InvocationID, m.FunctionID, CodeTooManyInvocations, why))
		return
	}
	if !e.queues.push(m.Action.Queue, j) {
		j.done()
		reply(encodeError(m.InvocationID, m.FunctionID, wire.CodeEnqueueError, "the engine is shutting down"))
		return
	}
	reply(encodeResult(m.InvocationID, m.FunctionID, mustJSON(map[string]string{"messageReceiptId": j.receipt})))
}

// admitJob counts a job of size bytes against c's budget, or says why
// not: queued jobs are calls in flight like any other, so a client cannot
// park unbounded work (and memory) in the engine's queues.
func (e *Engine) admitJob(c *conn, size int64) string {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if !c.local {
		if c.calls.Load() >= int64(e.cfg.MaxInFlightPerConn) {
			return fmt.Sprintf("too many invocations and queued jobs in flight from this connection (max %d); wait for some to finish before enqueueing more",
				e.cfg.MaxInFlightPerConn)
		}
		if why := e.callerOverBudget(c, size); why != "" {
			return why
		}
	}
	c.calls.Add(1)
	c.callBytes.Add(size)
	return ""
}

// done returns a connection's job to its budget.
func (j *job) done() {
	if j.from != nil {
		j.from.calls.Add(-1)
		j.from.callBytes.Add(-j.size)
	}
}

func (q *queueSet) push(name string, j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	jq := q.queues[name]
	if jq == nil {
		jq = &jobQueue{}
		q.queues[name] = jq
	}
	jq.jobs = append(jq.jobs, j)
	if !jq.running {
		jq.running = true
		q.wg.Add(1)
		go q.drain(name, jq)
	}
	return true
}

func (q *queueSet) drain(name string, jq *jobQueue) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if len(jq.jobs) == 0 || q.closed {
			for i := range jq.jobs {
				jq.jobs[i].done() // dropped at shutdown
			}
			jq.running = false
			jq.jobs = nil
			q.mu.Unlock()
			return
		}
		j := jq.jobs[0]
		jq.jobs[0] = job{} // do not pin the payload until the queue empties
		jq.jobs = jq.jobs[1:]
		q.mu.Unlock()
		q.run(name, j)
	}
}

// run executes one job; a panic fails that job only.
func (q *queueSet) run(name string, j job) {
	defer j.done()
	defer func() {
		if r := recover(); r != nil {
			q.e.log.Error("panic while running a queued job", "queue", name, "function_id", j.functionID, "panic", r)
		}
	}()
	if j.fn != nil {
		j.fn()
		return
	}
	out := q.e.invokeAs(q.e.ctx, j.from, j.functionID, j.data, j.metadata)
	if out.err != nil {
		q.e.log.Warn("queued job failed", "queue", name, "function_id", j.functionID,
			"message_receipt_id", j.receipt, "code", out.err.Code, "message", out.err.Message)
	}
}

// bindingQueue names the queue that delivers one binding's events, so each
// binding sees its events in order and a slow target delays only itself.
// User queue names come from JSON and cannot collide in practice: the NUL
// prefix is not something a worker would send.
func bindingQueue(bindingID string) string { return "\x00trigger:" + bindingID }

// stop drops pending jobs and waits for running ones to return.
func (q *queueSet) stop() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}
