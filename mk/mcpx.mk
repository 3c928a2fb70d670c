# MCP Skills extension: real Python MCP clients against `bin/skills --standalone`.
# Included by the root Makefile.
#
#   make mcp-py-deps      .venv-mcp-clients with the pinned clients (reinstalled only when
#                         server/mcp/testdata/python-clients/requirements.txt changes)
#   make test-mcp-python  FastMCP's Skills-extension client (skills/list, skills/get,
#                         read_skill with digest checks, skills-ref validation of what it
#                         wrote back) and the official `mcp` client over HTTP (2025-11-25
#                         and 2026-07-28) and stdio, which must log no warnings

PYTHON3 ?= python3
MCP_PY := server/mcp/testdata/python-clients
MCP_PY_VENV := $(CURDIR)/.venv-mcp-clients
MCP_PY_STAMP := $(MCP_PY_VENV)/.deps-stamp

.PHONY: mcp-py-deps test-mcp-python

mcp-py-deps: $(MCP_PY_STAMP)

$(MCP_PY_STAMP): $(MCP_PY)/requirements.txt
	@test -x $(MCP_PY_VENV)/bin/python || $(PYTHON3) -m venv $(MCP_PY_VENV)
	$(MCP_PY_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(MCP_PY)/requirements.txt
	@touch $@

test-mcp-python: build mcp-py-deps
	cd $(MCP_PY) && SKILLS_BIN=$(BIN)/skills $(MCP_PY_VENV)/bin/python -m pytest -q

TEST_TARGETS += test-mcp-python
