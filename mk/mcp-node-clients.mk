# MCP: the skills MCP endpoint (server/internal/mcp) driven by the official MCP TypeScript
# clients, and the official MCP server conformance suite. Included by the root Makefile.
# (The Go tests of server/internal/mcp run with test-go.)
#
#   make mcp-deps   npm ci in server/internal/mcp/testdata/node-clients, only when its lock changed
#   make test-mcp   Node client tests (v2 @modelcontextprotocol/client on 2026-07-28,
#                   v1 @modelcontextprotocol/sdk on 2025-11-25; HTTP and stdio), then
#                   @modelcontextprotocol/conformance against a freshly started
#                   `bin/skills --standalone` (scenarios the registry cannot pass by
#                   design are listed in conformance-baseline.yml)

NPM ?= npm
NODE ?= node
MCP_NODE := server/internal/mcp/testdata/node-clients

.PHONY: mcp-deps test-mcp

mcp-deps: $(MCP_NODE)/node_modules/.deps-stamp

# `npm ci` empties node_modules first, so the stamp inside it is gone until it succeeds.
$(MCP_NODE)/node_modules/.deps-stamp: $(MCP_NODE)/package.json $(MCP_NODE)/package-lock.json
	cd $(MCP_NODE) && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

test-mcp: build mcp-deps
	cd $(MCP_NODE) && SKILLS_BIN=$(BIN)/skills $(NODE) --test --test-concurrency=1 test/*.test.mjs
	cd $(MCP_NODE) && SKILLS_BIN=$(BIN)/skills $(NODE) conformance.mjs

TEST_TARGETS += test-mcp
