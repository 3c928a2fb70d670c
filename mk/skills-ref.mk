# `skills-ref validate`, the Agent Skills reference validator (PyPI and npm), against
# `skills check` (server/internal/skillcheck/skillsref_test.go). Included by the root Makefile.
#
#   make test-skills-ref   installs skills-ref 0.1.1 from PyPI into .venv-skills-ref and 0.1.5
#                          from npm into server/internal/skillcheck/testdata/skills-ref (each
#                          again only when its pin changes), then compares both validators'
#                          verdicts with skills check on every folder skill of ../shared/corpora
#                          (CORPORA) and of the committed broken skills: each difference is
#                          explained in testdata/skills-ref/differences.txt. A validator that
#                          does not install is "not run"; with neither, the target says so and
#                          succeeds. With the PyPI one it also reads back the folders `skills
#                          sync` writes (server/internal/skillsync: the corpora and published
#                          skills synced from a real registry) and the archives the server
#                          sends, unpacked by unzip and tar (server/internal/downloads).

PYTHON3 ?= python3
NPM ?= npm
NODE ?= node
SKILLS_REF := server/internal/skillcheck/testdata/skills-ref
SKILLS_REF_VENV := $(CURDIR)/.venv-skills-ref
SKILLS_REF_PY_STAMP := $(SKILLS_REF_VENV)/.deps-stamp
SKILLS_REF_NPM_STAMP := $(CURDIR)/$(SKILLS_REF)/node_modules/.deps-stamp

.PHONY: test-skills-ref

$(SKILLS_REF_PY_STAMP): $(SKILLS_REF)/requirements.txt
	@test -x $(SKILLS_REF_VENV)/bin/python || $(PYTHON3) -m venv $(SKILLS_REF_VENV)
	$(SKILLS_REF_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(SKILLS_REF)/requirements.txt
	@touch $@

# `npm ci` empties node_modules first, so the stamp inside it is gone until it succeeds.
$(SKILLS_REF_NPM_STAMP): $(SKILLS_REF)/package.json $(SKILLS_REF)/package-lock.json
	cd $(SKILLS_REF) && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

# The test's "pypi: / npm: / corpora: not run: …" and "Summary: …" lines lose their
# file:line prefix, so `make test` shows them.
test-skills-ref:
	@py=; node=; notes=; \
	if $(MAKE) --no-print-directory $(SKILLS_REF_PY_STAMP); then py=$(SKILLS_REF_VENV)/bin/python; \
	else notes="pypi: not run: skills-ref did not install from PyPI (pip's output above)"; fi; \
	if command -v $(NODE) >/dev/null 2>&1 && $(MAKE) --no-print-directory $(SKILLS_REF_NPM_STAMP); then node=$$(command -v $(NODE)); \
	else notes="$$notes$${notes:+$$'\n'}npm: not run: skills-ref did not install from npm (npm's output above, or no $(NODE))"; fi; \
	if [ -z "$$py$$node" ]; then echo "test-skills-ref: not run: skills-ref installs from neither PyPI nor npm"; echo "$$notes"; exit 0; fi; \
	[ -z "$$notes" ] || echo "$$notes"; \
	set -o pipefail; SKILLS_REF_PYTHON=$$py SKILLS_REF_NODE=$$node CORPORA="$(CORPORA)" \
		$(GO) test -count=1 -v -run '^TestSkillsRef$$' ./server/internal/skillcheck/ 2>&1 \
		| sed -E 's/^ +skillsref_test\.go:[0-9]+: //' && \
	if [ -n "$$py" ]; then SKILLS_REF_PYTHON=$$py CORPORA="$(CORPORA)" \
		$(GO) test -count=1 -run '^(TestSyncCorpus|TestSyncCorpus322|TestSyncPublishedVersions)$$' ./server/internal/skillsync/ && \
		SKILLS_REF_PYTHON=$$py $(GO) test -count=1 -run '^TestArchivesUnpackWithRealTools$$' ./server/internal/downloads/; fi

TEST_TARGETS += test-skills-ref
