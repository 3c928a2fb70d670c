package skills

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []logLine
	notify  chan logLine
}

type logLine struct {
	Level   slog.Level
	Message string
}

func newLogRecorder() *logRecorder { return &logRecorder{notify: make(chan logLine, 1024)} }

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	l := logLine{rec.Level, rec.Message}
	r.mu.Lock()
	r.records = append(r.records, l)
	r.mu.Unlock()
	select {
	case r.notify <- l:
	default:
	}
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) has(level slog.Level, message string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.records {
		if l.Level == level && l.Message == message {
			return true
		}
	}
	return false
}

func (r *logRecorder) count(level slog.Level, message string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.records {
		if l.Level == level && l.Message == message {
			n++
		}
	}
	return n
}
