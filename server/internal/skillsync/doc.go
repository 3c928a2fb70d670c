// Package skillsync mirrors chosen skills of a registry into the folders
// agents read (`skills sync`), with a lock file that records what was
// written.
//
// A run resolves the selection (ids, namespaces, a label, pins, search
// queries; Selection) against a Source — the registry's HTTP listener
// through the MCP Skills extension (source_http.go) or the registry's
// catalog functions over iii (source_iii.go) — and brings every target
// folder (an agent's skills folder from the agent table, agents.go, or a
// folder given by hand) to that state:
//
//   - every skill is written as an Agent Skills folder (SKILL.md and its
//     files) staged beside the target and swapped into place in one rename,
//     so an agent never reads half a skill; every file's sha256 is checked
//     against what the registry listed before it is written;
//   - a file changed since the last sync stops the sync of that skill
//     (Options.Force overwrites); files the sync did not write are never
//     deleted: the lock (lock.go) names every file it wrote, per target;
//   - the lock is JSON, sorted and indented, written in one rename.
//
// Modes beside the plain sync: Frozen writes exactly what the lock says
// and fails, naming the skill and file, when the registry's content
// differs; Check only compares the folders with the lock (no network);
// Watch (watch.go) keeps the folders current from the registry's change
// notifications. docs/sync.md is the user's guide.
package skillsync
