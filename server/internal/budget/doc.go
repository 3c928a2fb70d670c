// Package budget shares a capacity between the clients of a surface:
// bytes of answers in flight (the JSON-RPC answers /rpc builds and writes,
// and the same for MCP), sandboxes, event streams. A Pool has a capacity
// and a share, the most one client may hold of it, so that no single
// client can take all of it; requests wait in arrival order for room (up
// to a bound) or are refused with a Refusal that says what is held and
// when to ask again (RetryAfter, for an HTTP Retry-After header).
//
// A client is whoever the surface can tell apart: an HTTP client by its
// address (ClientOf), an engine connection by its worker id or scoped
// token. The Pool does not care what the names mean.
package budget
