// Package history keeps the immutable versions and movable labels of the
// registry's skills and prompts.
//
// # Model
//
// Every change of an id's content (a skill body, a prompt definition)
// becomes a version: an integer counting from 1 per id, with its
// registered_at, size, sha256 and an optional message and author. The
// same content again makes no version. Labels are named pointers to
// versions; "latest" is implicit (the newest version) and moved by the
// registry only. History outlives the content: unregistering an id keeps
// its versions, and a later registration continues the numbering.
//
// # Where it lives
//
// Two state scopes per registry scope S, in the registry's kv.Store (the
// engine's state::* functions, or in the standalone process the engine's
// bbolt store itself, so history never sits on the heap):
//
//	S.history   key id       → head: newest version and digest, labels, and per kept version its number, content key, size and time
//	S.versions  key 16 hex   → {"id","version","registered_at","bytes","sha256","message","author","content"}
//
// Content keys are a sequence (fixed-width hex), so new versions are
// appended at the end of the store's tree instead of scattered over it.
// In memory there is only a summary per id (latest number and digest,
// labels, and 16 bytes per kept version for retention), so a re-register of
// unchanged content is decided without a read.
//
// # Durability
//
// A new version is one Commit of its content row, the head, the removal of
// versions retention drops and the caller's served row: one transaction on
// a store that has them (the embedded engine's), writes sent together over
// iii; the call returns when all are durable. Over iii a crash in between
// can leave one version half-written, which Repair (run when the registry
// loads) settles: a head whose newest version has no content row forgets
// that version, and served content that differs from the newest version
// becomes a new version. Nothing acknowledged is lost.
//
// The rows are written in rows.go, with registered_at in the registry's
// format (registry.Timestamp); rows written before it (nine fraction
// digits always) are read as the instant they name.
//
// # Retention
//
// An id keeps its last Retain versions plus every labelled one; the whole
// history keeps at most MaxBytes of content, dropping the oldest unlabelled
// version of any id first (the newest version of an id is never dropped).
package history
