// Package webhooks tells operator-configured URLs about every change of a
// skill: register, new version, label move, rollback, yank, unregister. Each
// change is one POST of
//
//	{"type": "version", "timestamp": "2026-11-28T10:00:00Z", "data": {"id": "team/skill", "version": 3, …}}
//
// signed the Standard Webhooks way: headers webhook-id (the same on every
// attempt, so a receiver can drop a repeat), webhook-timestamp (the
// attempt's Unix seconds) and webhook-signature, "v1," and the base64 of
// HMAC-SHA256 over id.timestamp.body with the key of the endpoint's
// whsec_<base64> secret (Sign, Verify).
//
// # Delivery
//
// Publish stores one delivery per endpoint that takes the event in a
// kv.Store before it returns, so deliveries survive a restart. Each
// endpoint has a loop (Run) that keeps a line per skill: only the first
// delivery of a skill is in flight, so a skill's changes arrive in the
// order they were published, each delivered once (at least once: a
// delivery acknowledged just before a crash, before its row was removed, is
// sent again with the same webhook-id). Up to Concurrency skills are in
// flight at once per endpoint.
//
// A 2xx answer delivers. Anything else — an error status, a refused or
// dropped connection, a timeout (Timeout, 15 s, for the whole attempt) —
// is tried again after an exponential backoff (cenkalti/backoff: 5 s, ×3,
// capped at 2 h, jittered), up to MaxAttempts (12, about 9½ hours). A
// skill's later changes wait behind a failing one. After the last attempt
// the delivery becomes a dead letter with its last status and error
// (DeadLetters); Resend queues it again with the same webhook-id, behind
// its skill's queued changes.
//
// # Only the configured URLs
//
// A request goes only to a URL in Options.Endpoints: queued rows name
// their endpoint by a hash of its URL and are sent to the configured URL
// with that hash, never to a URL read from storage; rows of a URL no longer
// configured stay stored and unsent. Redirects are never followed (a 3xx
// is a failed attempt that names the Location, so the operator can
// configure it). URLs with credentials are refused. Requests honour
// HTTPS_PROXY / HTTP_PROXY, the operator's own setting.
//
// # Bounds
//
// At most MaxQueue (10 000) deliveries wait per endpoint, in memory and in
// the store; a change past it becomes a dead letter at once. At most
// MaxDead (1 000) dead letters are kept per endpoint, the oldest dropped.
// At most MaxResponseBytes (64 KiB) of an answer are read; 200 bytes of it
// (printable characters only) are kept as the error.
//
// # Several nodes
//
// Rows carry the node's name (Options.Node); each node delivers what it
// published. Publish a change on the node that made it, once.
package webhooks
