// Package xproc holds the cross-process benchmarks: the registry measured
// the way users call it, from a client in another process.
//
// The benchmarks build bin/skills, start `skills --standalone` as a child
// process, and call it over WebSocket from the benchmark's process. In the
// same run they measure a floor: a two-hop WebSocket echo where the relay
// and the echo server are each their own process (this test binary started
// again in another role), so the floor pays the same hops as a registry
// call:
//
//	registry: caller → engine → registry worker → engine → caller
//	floor:    caller → relay  → echo server     → relay  → caller
//
// The request is small and the answer carries 2 KiB, like a skill::fetch of
// one 2 KiB skill. The relay multiplexes every caller over one connection
// to the echo server, as the engine does towards the registry worker.
// A client or floor inside the benchmark's own process would flatter both:
// the scheduler then hands work between goroutines instead of processes.
//
// The surfaces have floors of their own, each in its own process too:
// BenchmarkMCP reads through the official go-sdk client from a bare go-sdk
// server returning a constant resource and prompt, BenchmarkWebSkillPage
// fetches the same HTML from a bare net/http server holding it in memory.
// BenchmarkForgedChanges floods a registry that shares state with forged
// skills::changes messages and reports its CPU and resident size.
//
// Run with `make bench` or
//
//	go test -run '^$' -bench . ./server/internal/xproc/
//
// SKILLS_BIN=path measures a prebuilt binary instead of building one (to
// compare two versions on the same machine). XPROC_SKILLS_FLAGS adds flags
// to every `skills --standalone` it starts, e.g. "--pprof-addr
// 127.0.0.1:6060" to take CPU profiles of the registry under load
// (go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=5).
//
// Every row reports the callers' CPU time per call (client_cpu_µs/op: what
// the client library costs; the floor's rows show a bare gorilla client).
// BenchmarkRegister also reports the registry process's (server_cpu_µs/op):
// on a machine with two cores their sum bounds the rate.
package xproc
