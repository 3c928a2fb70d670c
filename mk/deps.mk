# What the test targets install on a fresh Debian/Ubuntu machine (apt-get, with sudo when
# not root): chromium (web-deps), git (directory-deps), zip, unzip and tar (archive-deps),
# bubblewrap, python3 and util-linux (sandbox-deps), nginx, caddy, systemd and openssl
# (deploy-deps), redis-server (cluster-deps), prometheus (metrics-deps; webhooks-py-deps makes a
# Python venv instead). Each *-deps target lists what is missing and hands it to
# scripts/install-packages. Where apt-get or sudo is unavailable, that prints
# "<target>: not run: …" and records it, the run goes on, and the tests that need the
# packages skip instead of failing: the test targets read the record through
# deps-installed (1 when the packages are there). Included by the root Makefile.
#
#   make deps   every install step at once

DEPS_DIR := $(BIN)/deps
export DEPS_DIR

# $(call deps-installed,TARGET): 1 unless TARGET's install step recorded packages it could
# not install. Use it in a recursively expanded (=) variable, or write it into a recipe
# line as the shell command $(call deps-installed-sh,TARGET): both are evaluated when the
# recipe runs, after the install step.
deps-installed = $(shell test -e $(DEPS_DIR)/$(1).missing || echo 1)
deps-installed-sh = $$(test -e $(DEPS_DIR)/$(1).missing || echo 1)

.PHONY: deps
deps: web-deps directory-deps sandbox-deps deploy-deps cluster-deps metrics-deps webhooks-py-deps
