# Two real iii engines on one Redis, one registry on each (server/internal/clustertest;
# docs/deploy.md "N engines on Redis"). Included by the root Makefile.
#
#   make test-cluster   finds the engine at $III_BIN or as iii on PATH (without one it prints
#                       "not run" and succeeds: the engine is not part of the project), installs
#                       redis-server from Debian when missing (where apt-get or sudo is
#                       unavailable the Redis checks are "not run": mk/deps.mk), and runs the
#                       cluster checks and the MCP bridges in front of our registry on the
#                       engine: `skills mcp`, and upstream's mcp worker when installed
#                       (III_MCP_BIN or iii-mcp on PATH)

.PHONY: cluster-deps test-cluster

cluster-deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing=redis-server; \
	scripts/install-packages --no-install-recommends cluster-deps $$missing

test-cluster:
	@iii="$${III_BIN:-$$(command -v iii || true)}"; \
	if [ -z "$$iii" ] || [ ! -x "$$iii" ]; then \
		echo "test-cluster: not run: no iii engine (set III_BIN)"; exit 0; fi; \
	$(MAKE) --no-print-directory build cluster-deps && \
	cd server && CLUSTER_TESTS_REQUIRED=$(call deps-installed-sh,cluster-deps) III_BIN="$$iii" SKILLS_BIN=$(BIN)/skills \
		$(GO) test -count=1 -timeout 10m -v -run 'TestTwoEnginesOnRedis|TestBridgedEnginesOnRedis|TestObservabilityAcrossEnginesOnRedis|TestMCPBridgesOnRealEngine|TestTrustAcrossNodes' ./internal/clustertest/

TEST_TARGETS += test-cluster
