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
//  3. {node, scope, op, key, from, to} is published on rules.TopicChanges.
//
// Every instance subscribes to rules.TopicChanges and applies a message of another node
// by re-reading the one key it names (Scope.Apply: never by trusting a
// payload that may arrive out of order, or be forged). Pub/sub is
// at-most-once, so each instance remembers the generation up to which it
// has applied every change; a periodic reconcile reads the counter (one
// state::get, whatever the catalog's size) and re-lists every scope only
// when changes it has not applied stay missing for two checks in a row.
// Connects and reconnects re-list too.
//
// # Forged and flooded messages
//
// Any engine client may publish on rules.TopicChanges, so a message is a hint to
// re-read one key, never a reason to re-list:
//
//   - a message naming a scope nobody registered, or a key that is not
//     one (Scope.Apply refuses it before any read), costs no read;
//   - re-reads are coalesced per key (one in flight, one waiting) and run
//     by Options.Appliers goroutines; at most Options.MaxPendingKeys keys
//     wait, more make the queue overflow into one re-list;
//   - a message's generation hop (from → to) counts only when to is
//     from+1 and it lies within the counter read from state: forged hops
//     cannot move what was applied past the real generation, nor grow
//     memory (at most maxHops are held);
//   - re-lists run one at a time and at most once per
//     Options.MinRelistInterval, whatever asks for them (a gap, a counter
//     that went back, an overflow); connects are not limited.
//
// On a store nobody else shares (the embedded engine of --standalone) New
// returns an instance that announces nothing and re-lists once, at Start.
package cluster
