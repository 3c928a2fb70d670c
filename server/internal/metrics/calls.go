package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/iii-skills/skills/server/internal/surface"
)

// callTable resolves (function, surface, code) to its series once and
// keeps it, so that recording a call takes no lock and no allocation: the
// label values are indexes into fixed tables, and each series is created
// by the first call that needs it.
type callTable struct {
	functions map[string]int // id → index; len(functionNames)-1 is "other"
	codes     map[string]int // code → index; 0 is "ok", len(codeNames)-1 is "other"

	functionNames []string
	codeNames     []string

	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	counters   []atomic.Pointer[counterCell]  // [function][surface][code]
	histograms []atomic.Pointer[observerCell] // [function][surface]
}

type counterCell struct{ c prometheus.Counter }
type observerCell struct{ o prometheus.Observer }

func newCallTable(functions, codes []string) (callTable, error) {
	if err := checkValues("function id", functions, Other); err != nil {
		return callTable{}, err
	}
	if err := checkValues("code", codes, CodeOK, Other); err != nil {
		return callTable{}, err
	}
	t := callTable{
		functions:     make(map[string]int, len(functions)),
		codes:         make(map[string]int, len(codes)+1),
		functionNames: append(append([]string(nil), functions...), Other),
		codeNames:     append(append([]string{CodeOK}, codes...), Other),
	}
	for i, f := range functions {
		t.functions[f] = i
	}
	for i, c := range t.codeNames[:len(t.codeNames)-1] {
		t.codes[c] = i
	}
	t.counters = make([]atomic.Pointer[counterCell], len(t.functionNames)*surface.Count*len(t.codeNames))
	t.histograms = make([]atomic.Pointer[observerCell], len(t.functionNames)*surface.Count)
	return t, nil
}

// index returns the table indexes of a call's labels.
func (t *callTable) index(function string, s surface.Surface, code string) (f, c int) {
	f, ok := t.functions[function]
	if !ok {
		f = len(t.functionNames) - 1
	}
	if code == "" {
		code = CodeOK
	}
	c, ok = t.codes[code]
	if !ok {
		c = len(t.codeNames) - 1
	}
	return f, c
}

// Call records one call of function on surface s that ended with code
// ("ok", "" meaning the same, or a refusal code) after d. A function id or
// code outside the declared sets is counted as "other"; a call on an
// unknown surface is not counted.
func (m *Metrics) Call(function string, s surface.Surface, code string, d time.Duration) {
	if !s.Valid() {
		return
	}
	t := &m.calls
	f, c := t.index(function, s, code)
	fs := f*surface.Count + int(s)

	cc := t.counters[fs*len(t.codeNames)+c].Load()
	if cc == nil {
		// Two first calls may both get here: WithLabelValues hands both
		// the same series, so either cell is right.
		cc = &counterCell{t.total.WithLabelValues(t.functionNames[f], s.String(), t.codeNames[c])}
		t.counters[fs*len(t.codeNames)+c].Store(cc)
	}
	cc.c.Inc()

	oc := t.histograms[fs].Load()
	if oc == nil {
		oc = &observerCell{t.duration.WithLabelValues(t.functionNames[f], s.String())}
		t.histograms[fs].Store(oc)
	}
	oc.o.Observe(d.Seconds())
}
