# Conformance: the black-box registry suite (conformance/registry) and the publisher suite
# (conformance/publisher) run once per SDK driver. See conformance/README.md and DRIVER.md.
# Included by the root Makefile; `make test` runs `conformance` last.
#
#   make conformance                      build and start our `skills --standalone`, run every spec
#   III_URL=ws://host:49134 make conformance
#                                         run against an external engine + registry instead
#   make conformance CONFORMANCE_FLAGS=--ginkgo.label-filter=notifications
#                                         Ginkgo flags for every suite (e.g. one feature group)
#
# Ends with one plain line per target:
#   registry: 147 passed, 0 failed
#   go: 11 passed, 0 failed
#   node: not run (driver missing: sdk-node/dist/driver.js)
# and fails when a spec failed or a suite did not run. A missing SDK driver is reported
# as "not run", never as passed; CONFORMANCE_REQUIRE_DRIVERS=1 makes it fail the target.

CONFORMANCE_OUT := $(BIN)/conformance
CONFORMANCE_FLAGS ?=
CONFORMANCE_TIMEOUT ?= 30m
CONFORMANCE_REQUIRE_DRIVERS ?=
# The root Makefile always defines III_URL (for `make run`); only a value the user gave
# (environment or command line) means "test that external engine".
CONFORMANCE_URL_FLAG := $(if $(filter environment environment\ override command\ line,$(origin III_URL)),--iii-url=$(III_URL))
CONFORMANCE_GO_TEST := env -u III_URL $(GO) test -count=1 -timeout $(CONFORMANCE_TIMEOUT)
# Other groups (mk/<group>.mk) add "name=report.json" here and their target as a
# prerequisite of `conformance`; the summary prints one line for each.
CONFORMANCE_REPORTS +=

# sdk:file whose presence means the driver exists (the command is in DRIVER.md).
CONFORMANCE_DRIVERS := go:sdk-go/skills/internal/driver/main.go \
                       node:sdk-node/dist/driver.js \
                       python:sdk-python/src/iii_skills/_driver.py

.PHONY: conformance conformance-registry conformance-publishers

conformance-registry:
	@mkdir -p $(CONFORMANCE_OUT)
	@rm -f $(CONFORMANCE_OUT)/registry.json
	-$(CONFORMANCE_GO_TEST) ./conformance/registry -args \
		$(CONFORMANCE_URL_FLAG) --ginkgo.json-report=$(CONFORMANCE_OUT)/registry.json $(CONFORMANCE_FLAGS)

# Each SDK whose driver exists runs the publisher suite; its report feeds the summary.
conformance-publishers:
	@mkdir -p $(CONFORMANCE_OUT)
	@for d in $(CONFORMANCE_DRIVERS); do \
		sdk=$${d%%:*}; file=$${d#*:}; rm -f $(CONFORMANCE_OUT)/$$sdk.json; \
		if [ ! -e "$$file" ]; then echo "conformance: $$sdk driver missing ($$file)"; continue; fi; \
		if [ $$sdk = python ] && [ ! -x .venv/bin/python ]; then echo "conformance: python driver missing (.venv/bin/python)"; continue; fi; \
		echo "$(CONFORMANCE_GO_TEST) ./conformance/publisher -args --sdk=$$sdk ..."; \
		$(CONFORMANCE_GO_TEST) ./conformance/publisher -args --sdk=$$sdk $(CONFORMANCE_URL_FLAG) \
			--ginkgo.json-report=$(CONFORMANCE_OUT)/$$sdk.json $(CONFORMANCE_FLAGS) || true; \
	done

conformance: conformance-registry conformance-publishers
	@args="registry=$(CONFORMANCE_OUT)/registry.json $(CONFORMANCE_REPORTS)"; \
	for d in $(CONFORMANCE_DRIVERS); do \
		sdk=$${d%%:*}; file=$${d#*:}; \
		if [ $$sdk = python ] && [ ! -x .venv/bin/python ]; then file=.venv/bin/python; fi; \
		if [ -e "$$file" ]; then args="$$args $$sdk=$(CONFORMANCE_OUT)/$$sdk.json"; \
		else args="$$args $$sdk=missing:$$file"; fi; \
	done; \
	$(GO) run ./tools/conformancesummary $(if $(CONFORMANCE_REQUIRE_DRIVERS),-require-drivers) $$args
