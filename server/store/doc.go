// Package store is the durable key/value storage behind the embedded iii
// engine's state::* functions.
//
// # Model
//
// Data is addressed by (scope, key); values are raw JSON bytes that the store
// validates but never interprets. One bbolt bucket holds one scope, so a
// scope maps directly to what state::list_groups reports. Each record is an
// 8-byte big-endian insertion sequence followed by the JSON value. The
// sequence gives state::list its order: insertion order, where updating an
// existing key keeps its position and deleting then re-creating a key moves
// it to the end (this matches the real engine's kv adapter, which returns
// values in insertion order).
//
// # Why one committer goroutine
//
// Every acknowledged Set, Delete or Update must survive a crash, so it has to
// be committed and fsync'd before the call returns. An fsync costs
// milliseconds; one transaction per write would cap the store at a few
// hundred writes per second. Instead every write is sent to a single
// committer goroutine. It takes whatever is queued (up to 4096 writes),
// applies all of it in one bbolt transaction, waits for the fsync and then
// releases every caller of that batch. While one batch is being synced, the
// next one accumulates, so throughput grows with the number of concurrent
// writers (group commit) while a lone writer still pays just one fsync.
//
// The single committer also serialises writes: old values returned by Set,
// Delete and Update are exact, and Update runs its function atomically
// against the latest value, which is what state::update needs.
//
// # Why an in-memory mirror
//
// Reads never touch bbolt. The store loads the whole file into memory at
// Open and publishes each batch to that mirror after its commit succeeds, so
// a read sees exactly the acknowledged writes: never a write that might
// still be lost, always a write that has been acknowledged. The registry's
// data set (skills and prompts) is small, and reads vastly outnumber writes.
//
// OpenMemory gives the same behaviour without a file, for tests and for an
// engine started without a data directory.
package store
