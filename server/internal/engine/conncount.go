package engine

// ConnectionCounts is how many connections the engine holds, by kind, for
// the registry's metrics (skills_connections).
type ConnectionCounts struct {
	// InProcess counts in-process workers (DialContext: the standalone
	// registry's own).
	InProcess int
	// Workers counts worker sockets with full access (the engine token, or
	// none configured).
	Workers int
	// ScopedWorkers counts worker sockets of a scoped token.
	ScopedWorkers int
	// Telemetry counts the /otel sockets the official SDKs open beside
	// their worker socket.
	Telemetry int
}

// ConnectionCounts counts the connections open now: one pass over the
// worker connections under the registries' read lock (at most
// Config.MaxConnections of them), meant for a metrics scrape.
func (e *Engine) ConnectionCounts() ConnectionCounts {
	n := ConnectionCounts{Telemetry: int(e.sockets.telemetry.Load())}
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, c := range e.conns {
		switch {
		case c.local:
			n.InProcess++
		case c.scope != nil:
			n.ScopedWorkers++
		default:
			n.Workers++
		}
	}
	return n
}
