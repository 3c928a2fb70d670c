# Interop: the official iii-sdk clients (Node from npm, Python from PyPI) against our
# embedded engine and a Go worker (server/internal/interop). Included by the root Makefile.
#
#   make test-interop   install the Node client from its lock, then run the interop tests
#                       with INTEROP_REQUIRED=1 so a missing client fails instead of skipping

INTEROP_DIR := server/internal/interop

.PHONY: interop-deps test-interop

interop-deps: $(INTEROP_DIR)/node/node_modules/.deps-stamp

$(INTEROP_DIR)/node/node_modules/.deps-stamp: $(INTEROP_DIR)/node/package.json $(INTEROP_DIR)/node/package-lock.json
	cd $(INTEROP_DIR)/node && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The Python side runs on the project virtualenv (mk/python.mk), which pins iii-sdk.
test-interop: interop-deps venv gotestsummary
	set -o pipefail; INTEROP_REQUIRED=1 $(GO) test -count=1 -json ./$(INTEROP_DIR)/... 2>&1 | $(GOTESTSUMMARY)

TEST_TARGETS += test-interop
