# `skills add` and skill archives (server/internal/skilladd, server/internal/skillarchive;
# docs/add.md). Included by the root Makefile.
#
#   make archive-deps   apt-get install zip, unzip and tar when missing (the tests pack and
#                       unpack archives with Debian's tools; under make a missing one is a
#                       failure, not a "not run" skip, unless apt-get or sudo is unavailable:
#                       mk/deps.mk). Their git tests need git-http-backend: directory-deps.

.PHONY: archive-deps

archive-deps:
	@missing=""; \
	for tool in zip unzip tar; do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	scripts/install-packages archive-deps $$missing

test-go: archive-deps
test-go: export SKILLS_TEST_REQUIRE_ARCHIVERS = $(call deps-installed,archive-deps)
deps: archive-deps
