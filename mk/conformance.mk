# Conformance: the black-box registry suite (conformance/registry; see conformance/README.md).
# Included by the root Makefile; `make test` runs `conformance` last.
#
#   make conformance                      build and start our `skills --standalone`, run every spec
#   III_URL=ws://host:49134 make conformance
#                                         run against an external engine + registry instead
#   make conformance CONFORMANCE_FLAGS=--ginkgo.label-filter=notifications
#                                         one upstream feature group (or any Ginkgo flag)
#
# Ends with one plain line per target, e.g. `registry: 147 passed, 0 failed`, and fails
# when any spec failed or a suite did not run.

CONFORMANCE_OUT := $(BIN)/conformance
CONFORMANCE_FLAGS ?=
CONFORMANCE_TIMEOUT ?= 30m
# The root Makefile always defines III_URL (for `make run`); only a value the user gave
# (environment or command line) means "test that external engine".
CONFORMANCE_URL_FLAG := $(if $(filter environment environment\ override command\ line,$(origin III_URL)),--iii-url=$(III_URL))

.PHONY: conformance conformance-registry

conformance-registry:
	@mkdir -p $(CONFORMANCE_OUT)
	@rm -f $(CONFORMANCE_OUT)/registry.json
	-env -u III_URL $(GO) test -count=1 -timeout $(CONFORMANCE_TIMEOUT) ./conformance/registry -args \
		$(CONFORMANCE_URL_FLAG) --ginkgo.json-report=$(CONFORMANCE_OUT)/registry.json $(CONFORMANCE_FLAGS)

conformance: conformance-registry
	@$(GO) run ./conformance/cmd/summary registry=$(CONFORMANCE_OUT)/registry.json
