# Observability checks against real outside implementations: the /metrics
# handler scraped by Debian's Prometheus (server/internal/metrics), webhook
# deliveries verified by the Standard Webhooks project's Python package
# (server/internal/webhooks). Both run inside test-go. Included by the root
# Makefile.
#
#   make metrics-deps       apt-get install Debian's prometheus (prometheus, promtool)
#                           when missing (not run where apt-get or sudo is unavailable:
#                           mk/deps.mk); test-go then requires it
#   make webhooks-py-deps   .venv-webhooks with the standardwebhooks package from PyPI
#                           (server/internal/webhooks/testdata/python/requirements.txt);
#                           where it cannot be installed it prints "not run" and the
#                           test that needs it is skipped

.PHONY: metrics-deps webhooks-py-deps

PYTHON3 ?= python3
WEBHOOKS_PY := server/internal/webhooks/testdata/python
WEBHOOKS_PY_VENV := $(CURDIR)/.venv-webhooks
WEBHOOKS_PY_STAMP := $(WEBHOOKS_PY_VENV)/.deps-stamp

metrics-deps:
	@missing=""; \
	{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing=prometheus; \
	scripts/install-packages --no-install-recommends metrics-deps $$missing

webhooks-py-deps:
	@mkdir -p $(DEPS_DIR); \
	if [ -e $(WEBHOOKS_PY_STAMP) ] && [ $(WEBHOOKS_PY_STAMP) -nt $(WEBHOOKS_PY)/requirements.txt ]; then \
		rm -f $(DEPS_DIR)/webhooks-py-deps.missing; exit 0; fi; \
	if { test -x $(WEBHOOKS_PY_VENV)/bin/python || $(PYTHON3) -m venv $(WEBHOOKS_PY_VENV); } && \
		$(WEBHOOKS_PY_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(WEBHOOKS_PY)/requirements.txt; then \
		touch $(WEBHOOKS_PY_STAMP); rm -f $(DEPS_DIR)/webhooks-py-deps.missing; \
	else \
		echo "webhooks-py-deps: not run: could not install $(WEBHOOKS_PY)/requirements.txt into $(WEBHOOKS_PY_VENV) (needs python3-venv and PyPI); the Standard Webhooks check is skipped"; \
		echo standardwebhooks >$(DEPS_DIR)/webhooks-py-deps.missing; \
	fi

test-go: metrics-deps webhooks-py-deps
test-go: export METRICS_REQUIRE_PROMETHEUS = $(call deps-installed,metrics-deps)
test-go: export WEBHOOKS_PYTHON = $(if $(call deps-installed,webhooks-py-deps),$(WEBHOOKS_PY_VENV)/bin/python)
