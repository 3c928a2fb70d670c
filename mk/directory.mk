# Skills folders and the iii-directory v0.5 surface (server/catalog, server/fsource,
# server/directory). Included by the root Makefile.
#
#   make conformance-directory   the black-box `directory` group against our skills --standalone
#                                on a folder it controls; against another engine:
#                                III_URL=ws://host:port CONFORMANCE_SKILLS_FOLDER=/srv/skills make conformance-directory
#   make bench-directory         cold load, index read, edit-to-subscriber latency, RSS (10 000 skills)
#   make run SKILLS_FOLDER=examples/skills   the standalone registry serving that folder

DIRECTORY_URL_FLAG := $(if $(filter environment environment\ override command\ line,$(origin III_URL)),--iii-url=$(III_URL))

.PHONY: conformance-directory bench-directory

conformance-directory:
	env -u III_URL $(GO) test -count=1 -timeout 20m ./conformance/directory -args $(DIRECTORY_URL_FLAG) \
		$(if $(CONFORMANCE_SKILLS_FOLDER),--skills-folder=$(CONFORMANCE_SKILLS_FOLDER))

bench-directory:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-2s} ./server/fsource/ ./server/catalog/ ./server/directory/

TEST_TARGETS += conformance-directory
