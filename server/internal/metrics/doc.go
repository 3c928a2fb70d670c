// Package metrics is the registry's Prometheus metrics: one private
// registry (never the process-wide default, so no library can add series
// behind our back) holding the Go runtime and process collectors and the
// registry's own series, served in the Prometheus text format by Handler.
//
// # What it counts
//
//   - skills_calls_total{function, surface, code} and
//     skills_call_duration_seconds{function, surface}: every call of a
//     registry function on each surface (surface.III, MCP, RPC, Web), by
//     outcome: code "ok" or the refusal code (Metrics.Call).
//   - skills_catalog_skills{origin}: the catalog's size by origin, read at
//     scrape time from a function the caller gives (CatalogSize).
//   - skills_notifications_sent_total{surface}: change notifications sent
//     (Notified).
//   - skills_cluster_propagation_lag_seconds and skills_cluster_relists_total:
//     how long a change took to reach this node from the node that made it,
//     and how often this node re-read everything (PropagationLag, Relisted).
//   - skills_store_commit_seconds, skills_store_fsync_seconds,
//     skills_store_commit_writes and skills_store_commit_errors_total: the
//     store's group commits (StoreCommitted, fed by store.SetCommitObserver).
//   - skills_sandbox_runs_total{outcome}, skills_sandbox_cpu_seconds and
//     skills_sandbox_peak_memory_bytes: sandbox runs (SandboxRun, fed by
//     sandbox.Config.Observe).
//   - skills_connections{kind}: open connections by kind, read at scrape
//     time (Connections; the engine's ConnectionCounts, MCP sessions, …).
//
// # Bounds
//
// Every label value comes from a set fixed when the series is declared,
// never from a skill id or other user input: function ids from
// Options.Functions (anything else is counted as "other"), codes from
// Options.Codes plus "ok" (anything else is "other"), surfaces from package
// surface, sandbox outcomes from package sandbox, origins and connection
// kinds from the lists given with their functions ("other" sums what a
// function reports outside its list). So the number of series is bounded
// by (functions+1) × 5 × (codes+2) call counters and (functions+1) × 5
// histograms whatever the callers send; series are created on first use,
// so an unused function costs nothing.
//
// Recording a call is a map look-up of the function id and the code, two
// atomic loads of the cached series and their updates: no allocation, no
// lock (BenchmarkCall). Handler serves at most 4 scrapes at once (more get
// 503) and gives up on a scrape after 10 s.
//
// The handler is meant to be mounted at GET /metrics behind the same Host
// and token checks as the other HTTP endpoints, on the HTTP listener or on
// a listener of its own.
package metrics
