// Package history keeps the immutable versions and movable labels of the
// registry's skills and prompts.
//
// # Model
//
// Every change of an id's content (a skill body, a prompt definition)
// becomes a version: an integer counting from 1 per id, with its
// registered_at, size, sha256, the signature over it with the registry's
// verdict (who signed it, the key's fingerprint) and an optional message
// and author. The same content again (by the same signing key) makes no
// version. Labels are named pointers to versions; "latest" is implicit
// (the newest version) and moved by the registry only. A selector is a
// version number, a label or sha256:<hex> (the exact content). A yanked
// version leaves latest, labels and reads without a selector (they fall
// back to the newest version not yanked, see Serving) and stays readable
// by number or digest; an id may carry a deprecation message. History
// outlives the content: unregistering an id keeps its versions, yanks and
// deprecation, and a later registration continues the numbering.
//
// # Where it lives
//
// Two state scopes per registry scope S, in the registry's kv.Store (the
// engine's state::* functions, or in the standalone process the engine's
// bbolt store itself, so history never sits on the heap):
//
//	S.history   key id       → head: seq, v<n> per kept version (content key, size, time, sha256, signer), labels, y<n> per yank, deprecated
//	S.versions  key 16 hex   → {"id","version","registered_at","bytes","sha256","message","author","signed_by","key","signature","content"}
//
// Content keys are a sequence (fixed-width hex), so new versions are
// appended at the end of the store's tree instead of scattered over it.
// In memory there is only a summary per id (latest number, labels, yanks,
// and per kept version its key, size, time, digest and signer), so a
// re-register of unchanged content and a pin by digest are decided
// without a read. Every read of a version's content checks it against the
// sha256 its row and its head recorded (Corrupt otherwise).
//
// On a store other registry instances share (kv.Store.Shared, engines on
// one Redis), heads change only by atomic operations on their fields
// (kv.Updater: state::update): a new version's number is an increment of
// seq and the version a field of its own, so two instances recording one
// id at once each keep their version (rows.go, record.go).
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
