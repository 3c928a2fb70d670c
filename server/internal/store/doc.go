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
// # Why not bbolt's DB.Batch
//
// bbolt's own [go.etcd.io/bbolt.DB.Batch] also groups concurrent writers into one
// transaction, but it collects them with a timer (MaxBatchDelay, 10 ms by
// default) unless MaxBatchSize calls arrive first: a lone writer waits for
// the timer on every write, and the right size depends on how many writers
// there are. It also needs a goroutine per waiting write, may run a write's
// function twice when the batch fails, and gives no order between the
// writers of a batch. The committer here sizes each batch from the writers
// it just released (a lone writer is never delayed), takes async writes
// without a goroutine each (the engine's state::* calls), and hands results
// back in commit order, which the engine's state trigger relies on.
//
// # Where the values live
//
// A file-backed store keeps no copy of the values on the heap: reads run in
// a bbolt read transaction over its memory-mapped file and copy out the one
// value asked for. A transaction commits and fsyncs before its writers are
// released, so a read sees exactly the acknowledged writes (and, for the
// instant between the commit and the release, the ones about to be). The
// mapped pages are the kernel's page cache: shared, and given back under
// memory pressure. Each scope's next insertion sequence is the only thing
// kept in memory, found by one pass over the file at Open. Pages a commit
// touched stay mapped into the process until the kernel reclaims them, so
// after every MiB written the committer drops the map's pages from the
// process's resident set (madvise MADV_DONTNEED; they stay in the page
// cache): a store that receives hundreds of MiB (the registry's history)
// would otherwise show all of it as resident memory.
//
// In standalone mode this leaves the registry worker's copy (the one its
// reads are served from) as the only copy of each body in the process.
//
// # Observing commits
//
// SetCommitObserver hands every commit's figures (writes in it, whole
// commit time, and bbolt's write phase: dirty pages and meta page written
// and fdatasync'd) to a function on the committer goroutine; the registry's
// metrics use it for skills_store_commit_seconds and
// skills_store_fsync_seconds.
//
// OpenMemory keeps the data in maps instead (same semantics, nothing
// survives Close), for tests and for an engine started without a data
// directory.
package store
