// Package usage counts the reads of each skill and version: how many, on
// which surface (iii, mcp, rpc, web), by which client (the MCP clientInfo
// name, the worker's name on iii, …), when last, and per day. Skill authors
// and operators see from it which skills agents actually read.
//
// # The read path
//
// Counter.Read is called on every read. It never waits for I/O: it adds the
// read to an in-memory table of pending counts, split into 64 shards by
// skill id, each behind its own mutex held for a map look-up and a few
// increments (BenchmarkRead: ≈ 80 ns and no allocation once the skill has
// been read in the current interval). The time a read is stamped with is
// kept by Run to the second: the system clock was a third of Read's cost.
// The design not taken, a channel to one counting goroutine, costs less per
// send but drops most reads once the cores are busy
// (BenchmarkChannelAlternative). A background loop (Run) flushes the pending counts
// every FlushInterval (10 s by default) into a kv.Store, so they survive a
// restart; a crash loses at most the reads of one interval. Reads made
// while a flush writes are counted in the next one.
//
// # Rows, and several nodes
//
// Each node writes only its own rows: one per (skill id, version, node),
// under the key <id>@<version>@<node> (with '%' and '@' escaped), holding
// that node's cumulative counts. A flush reads its row, adds what is
// pending and writes it back; no other node ever writes that row, so no
// update is lost. Usage lists every row of an id (or all of them) and sums
// them across nodes: reads, by_surface, by_client and the day buckets add,
// last_read_at is the latest. This node's pending counts are added too, so
// a read shows at once.
//
// # Bounds
//
// Memory does not grow with the number of skills or clients:
//
//   - at most MaxPending (default 20 000) distinct (skill, version, day)
//     entries are pending; when the table is full a flush starts at once,
//     and reads of entries not yet in the table are counted under "other"
//     (Report.Other) until it has run;
//   - each entry and each row names at most MaxClients (default 16)
//     clients, the rest are counted under the client "other";
//   - a client name is cut to 64 bytes, control characters replaced, an
//     empty one is "unknown";
//   - rows keep the last Days (default 30) day buckets.
//
// An entry costs about 100 bytes plus 24 per client it names; client names
// are shared between entries (up to 4 096 distinct names, then copied per
// entry). BenchmarkMemory reads 100 000 skills by 1 000 clients, 2 million
// reads with the store down (nothing flushed, every entry naming 16
// clients): the counter holds ≈ 11 MiB of heap, 80 % of the reads counted
// as "other", whatever the number of reads. The rows live in the kv.Store (the
// server's state), not in memory; Usage reads them when asked.
package usage
