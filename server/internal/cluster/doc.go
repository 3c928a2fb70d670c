// Package cluster keeps registry instances coherent when they share state
// (the real iii engine's redis adapters: N engines, one registry on each).
// Each instance holds what it serves in memory, and a `state` trigger
// fires only on the engine that did the write, so every write is also
// announced. Like hashicorp/memberlist's Delegate, each kind of shared
// data plugs in through a small interface (Scope: apply a change to one
// key, re-list everything) and never sees the transport.
//
// # Protocol
//
//  1. the write goes to state;
//  2. the generation counter (state scope Options.GenerationScope, key
//     "generation", {"n": N}) is incremented atomically (state::update);
//  3. the change log's entry for N ({n, scope, key}) is written;
//  4. {node, scope, op, key, from, to} is published on skills::changes
//     (rules.TopicChanges).
//
// Every instance subscribes to the topic and applies a message of another
// node by re-reading the one key it names (Scope.Apply: never by trusting
// a payload that may arrive out of order, or be forged). Pub/sub is
// at-most-once, so each instance remembers the generation up to which it
// has applied every change; a periodic reconcile reads the counter (one
// state::get, whatever the catalog's size) and, when changes it has not
// applied stay missing for two checks in a row, reads their keys from the
// change log that every bump also writes (changelog.go: the last 256
// changes) and re-reads those keys alone. Only a gap the log cannot close
// re-lists every scope. Connects and reconnects re-list too.
//
// # Forged and flooded messages
//
// Any engine client may publish on the topic, so a message is a hint to
// re-read one key, never a reason to re-list, and it costs the instance
// nothing unless the counter says a change is unapplied:
//
//   - a message naming a scope nobody registered, or a key longer than
//     1 KiB, is dropped unread; one naming a key the scope cannot hold is
//     refused by Scope.Apply before any read;
//   - messages wait coalesced per key (at most Options.MaxPendingKeys
//     keys; more are dropped, an honest one leaving a gap the reconcile
//     finds); a batch of them first reads the counter, at most every
//     10 ms: a writer bumps it before it publishes, so when every change
//     up to it is applied here the whole batch is dropped unread, and
//     otherwise at most 4 keys (at least 8) are re-read per unapplied
//     change, until the counter is reached;
//   - a message's generation hop (from → to) counts only when to is
//     from+1 and it lies within the counter read from state: forged hops
//     cannot move what was applied past the real generation, nor grow
//     memory (at most 4 096 are held);
//   - re-lists run one at a time and at most once per
//     Options.MinRelistInterval, whatever asks for them (a gap, a counter
//     that went back); connects are not limited.
//
// What a forger can still do is what any engine client with state access
// can: bump the counter (each bump lets one batch re-read up to 8 keys,
// and a gap that stays open re-lists at most once per
// MinRelistInterval), or hide a lost change behind a forged hop until the
// next re-list. The shared state itself is the trust boundary.
//
// On a store nobody else shares (the embedded engine of --standalone) New
// returns an instance that announces nothing and re-lists once, at Start.
package cluster
