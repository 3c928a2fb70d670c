# Node: the `iii-skills` publisher SDK (sdk-node), its example (examples/node) and the
# conformance driver (sdk-node/dist/driver.js). Included by the root Makefile.
#
#   make node-deps     npm ci in sdk-node and examples/node, only when a lock file changed
#   make node-build    build sdk-node (ESM + CJS + declarations + driver) when a source changed
#   make test-node     type-check, unit tests, and integration tests against bin/skills
#   make example-node  run the resend example against $(III_URL) (start `make run` first)

NPM ?= npm
NODE ?= node
NODE_SDK := sdk-node
NODE_EXAMPLE := examples/node
NPM_CI := $(NPM) ci --no-audit --no-fund --loglevel=error

.PHONY: node-deps node-build test-node example-node

node-deps: $(NODE_SDK)/node_modules/.deps-stamp $(NODE_EXAMPLE)/node_modules/.deps-stamp

# `npm ci` empties node_modules first, so the stamp inside it is gone until it succeeds.
$(NODE_SDK)/node_modules/.deps-stamp: $(NODE_SDK)/package.json $(NODE_SDK)/package-lock.json
	cd $(NODE_SDK) && $(NPM_CI)
	@touch $@

# The example links the SDK (file:../../sdk-node) and its lock records the SDK's manifest.
$(NODE_EXAMPLE)/node_modules/.deps-stamp: $(NODE_EXAMPLE)/package.json $(NODE_EXAMPLE)/package-lock.json $(NODE_SDK)/package.json
	cd $(NODE_EXAMPLE) && $(NPM_CI)
	@touch $@

node-build: $(NODE_SDK)/dist/.build-stamp

$(NODE_SDK)/dist/.build-stamp: $(NODE_SDK)/node_modules/.deps-stamp $(wildcard $(NODE_SDK)/src/*.ts) \
		$(NODE_SDK)/tsup.config.ts $(NODE_SDK)/tsconfig.json $(NODE_SDK)/package.json
	cd $(NODE_SDK) && $(NPM) run --silent build
	@touch $@

test-node: build node-deps node-build
	cd $(NODE_SDK) && $(NPM) run --silent typecheck
	cd $(NODE_EXAMPLE) && $(NPM) run --silent typecheck
	cd $(NODE_SDK) && SKILLS_BIN=$(BIN)/skills $(NODE) --import tsx --test \
		test/unit/*.test.ts test/integration/*.test.ts

example-node: node-deps node-build
	cd $(NODE_EXAMPLE) && III_URL=$(III_URL) $(NODE) index.js

# The conformance suite starts `node sdk-node/dist/driver.js`.
conformance: node-build

TEST_TARGETS += test-node
