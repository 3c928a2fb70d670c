# The Agent Skills provider conformance suite (agentskills-testing 0.7.0 from PyPI, 48 tests)
# through the official MCP Python client against `bin/skills --standalone`.
# Included by the root Makefile.
#
#   make test-agentskills   installs server/internal/mcp/testdata/agentskills-testing/requirements.txt
#                           into .venv-agentskills (again only when it changes; the suite needs
#                           Python >= 3.12: AGENTSKILLS_PYTHON, else the first python3.13 / python3.12
#                           / python3 on PATH that is one, else pyenv's), then runs the suite's
#                           ProviderConformanceSuite over MCP on 2026-07-28 and on 2025-11-25, and
#                           against the reference server agentskills-mcp-server with the same
#                           provider as a control (48 tests each). "not run" when no such Python is
#                           found or the packages do not install.

AGENTSKILLS := server/internal/mcp/testdata/agentskills-testing
AGENTSKILLS_VENV := $(CURDIR)/.venv-agentskills
AGENTSKILLS_STAMP := $(AGENTSKILLS_VENV)/.deps-stamp
# The first Python >= 3.12 among the candidates (empty: none): on PATH, then pyenv's versions.
AGENTSKILLS_PYTHON ?= $(firstword $(foreach p,python3.13 python3.12 python3 \
	$(sort $(wildcard $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions/3.1[2-9]*/bin/python3)),$(shell \
	$(p) -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && echo $(p))))

.PHONY: test-agentskills

$(AGENTSKILLS_STAMP): $(AGENTSKILLS)/requirements.txt
	@test -x $(AGENTSKILLS_VENV)/bin/python || $(AGENTSKILLS_PYTHON) -m venv $(AGENTSKILLS_VENV)
	$(AGENTSKILLS_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(AGENTSKILLS)/requirements.txt
	@touch $@

test-agentskills: build
	@if [ -z "$(AGENTSKILLS_PYTHON)" ]; then \
		echo "test-agentskills: not run: agentskills-testing needs Python >= 3.12 and none is on PATH (set AGENTSKILLS_PYTHON)"; exit 0; fi; \
	if ! $(MAKE) --no-print-directory $(AGENTSKILLS_STAMP); then \
		echo "test-agentskills: not run: agentskills-testing did not install from PyPI (pip's output above)"; exit 0; fi; \
	cd $(AGENTSKILLS) && SKILLS_BIN=$(BIN)/skills $(AGENTSKILLS_VENV)/bin/python -m pytest -q -p no:cacheprovider

TEST_TARGETS += test-agentskills
