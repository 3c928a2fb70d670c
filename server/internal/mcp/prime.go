package mcp

import (
	"bytes"
	"net/http"
)

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
