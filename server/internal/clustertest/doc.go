// Package clustertest runs the registry against the real iii engine.
//
// TestTwoEnginesOnRedis runs it the way N-engine deployments do: Redis
// (redis-server from Debian), two real iii engines whose iii-state and
// iii-pubsub use the redis adapter, and one `skills --url` registry on each
// (docs/deploy.md, "N engines on Redis"). It checks that every node serves
// and announces what any node wrote (reads, listings, the index, on-change
// subscribers and an MCP client of the other node, unregister, prompts,
// published Skills Protocol bundles), that a registry killed and restarted
// and a Redis restarted catch up, that 64 callers on each node lose no
// call, and that a prompt or section whose publisher is on the other
// engine is named, not served. TestBridgedEnginesOnRedis gives each engine
// the engine's iii-bridge worker connected to the other: prompts and
// sections are then served across (docs/deploy.md, "Prompts and sections
// across engines"). TestMCPBridgesOnRealEngine puts MCP bridges in front of
// our registry on one engine: our `skills mcp --stdio`, and upstream's mcp
// worker when it is installed. BenchmarkPropagation and
// BenchmarkRealEngineFetch measure a write reaching the other node and
// reads through one and two engines, beside upstream's skills worker when
// it is installed; BenchmarkPromptRender a prompt rendered through the
// bridge beside one rendered on its handler's engine.
//
// Neither the engine nor upstream's workers are part of the project: the
// tests find the engine at $III_BIN or as iii on PATH, redis-server on
// PATH, upstream's mcp worker at $III_MCP_BIN or as iii-mcp on PATH and
// upstream's skills worker at $UPSTREAM_SKILLS_BIN. `make test-cluster`
// installs redis-server and prints "not run" without an engine; under plain
// go test a missing program skips with a "not run" line, unless
// CLUSTER_TESTS_REQUIRED=1 makes a missing engine or Redis a failure.
package clustertest
