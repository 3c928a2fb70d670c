// Package clustertest runs the registry the way N-engine deployments do:
// Redis (redis-server from Debian), two real iii engines whose iii-state
// and iii-pubsub use the redis adapter, and one `skills --url` registry on
// each (docs/deploy.md, "N engines on Redis"). It checks that every node
// serves and announces what any node wrote (reads, listings, the index,
// on-change subscribers and an MCP client of the other node, unregister,
// prompts), that a registry killed and restarted and a Redis restarted
// catch up, and that 64 callers on each node lose no call.
//
// The engine is not part of the project: the tests find it at $III_BIN or
// as iii on PATH, and redis-server on PATH. `make test-cluster` installs
// redis-server and prints "not run" without an engine; under plain go test
// a missing program skips with a "not run" line, unless
// CLUSTER_TESTS_REQUIRED=1 makes it a failure.
package clustertest
