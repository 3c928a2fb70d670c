// Package app assembles the skills server: one [Config] (config.yaml and
// the flags, bound in one place by [Config.AddFlags]), [Load] that refuses
// a malformed file, unknown keys (with file:line and the key meant) and
// another program's config, [Config.Validate], and [Start], which wires the
// embedded engine, the registry worker, the Skills Protocol runtime, the
// skills folders and the HTTP listener (MCP, /rpc, web page, probes) in
// the order they need and returns the running [Server] with its addresses.
//
// cmd/skills and the tests that need a whole server start it here, the way
// etcd's server/embed is used:
//
//	cfg := app.DefaultConfig()
//	cfg.Engine.Standalone, cfg.Engine.URL, cfg.Engine.DataDir = true, "ws://127.0.0.1:0", dir
//	srv, err := app.Start(ctx, cfg)
//	…
//	defer srv.Close()
//	// srv.EngineURL, srv.HTTPURL
package app
