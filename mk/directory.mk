# Skills folders and the iii-directory v0.5 surface (server/internal/catalog, server/internal/fsource,
# server/internal/directory). Included by the root Makefile.
#
#   make conformance-directory   the black-box `directory` group against our skills --standalone
#                                on a folder it controls; against another engine:
#                                III_URL=ws://host:port CONFORMANCE_SKILLS_FOLDER=/srv/skills make conformance-directory
#   make bench-directory         cold load, index read, edit-to-subscriber latency, RSS (10 000 skills)
#   make directory-deps          apt-get install git when git or git-http-backend is missing
#                                (server/internal/directory's download-from-git test serves a repository
#                                through git-http-backend; under make it fails instead of skipping,
#                                unless apt-get or sudo is unavailable: mk/deps.mk)

DIRECTORY_URL_FLAG := $(if $(filter environment environment\ override command\ line,$(origin III_URL)),--iii-url=$(III_URL))

.PHONY: conformance-directory bench-directory directory-deps

directory-deps:
	@missing=""; \
	command -v git >/dev/null 2>&1 && test -x "$$(git --exec-path 2>/dev/null)/git-http-backend" || missing=git; \
	scripts/install-packages directory-deps $$missing

# server/internal/directory's tests clone over git-http-backend; under make a missing git
# is a failure, not a skip (unless directory-deps could not install it here).
test-go: directory-deps
test-go: export SKILLS_TEST_REQUIRE_GIT = $(call deps-installed,directory-deps)

conformance-directory:
	env -u III_URL $(GO) test -count=1 -timeout 20m ./conformance/directory -args $(DIRECTORY_URL_FLAG) \
		$(if $(CONFORMANCE_SKILLS_FOLDER),--skills-folder=$(CONFORMANCE_SKILLS_FOLDER))

bench-directory:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-2s} ./server/internal/fsource/ ./server/internal/catalog/ ./server/internal/directory/

TEST_TARGETS += conformance-directory
