# MCP Skills extension: real Python MCP clients against `bin/skills --standalone`.
# Included by the root Makefile.
#
#   make mcp-py-deps      .venv-mcp-clients with the pinned clients (reinstalled only when
#                         server/internal/mcp/testdata/python-clients/requirements.txt changes)
#   make mcp-py1-deps     .venv-mcp-v1 with the latest 1.x of the official `mcp` client
#                         (server/internal/mcp/testdata/python-v1/requirements.txt)
#   make test-mcp-python  FastMCP's Skills-extension client (skills/list, skills/get,
#                         read_skill with digest checks, skills-ref validation of what it
#                         wrote back) and the official `mcp` client over HTTP (2025-11-25
#                         and 2026-07-28) and stdio, which must log no warnings; then the
#                         same quiet check with `mcp` 1.x (2025-11-25 over HTTP and stdio)

PYTHON3 ?= python3
MCP_PY := server/internal/mcp/testdata/python-clients
MCP_PY_VENV := $(CURDIR)/.venv-mcp-clients
MCP_PY_STAMP := $(MCP_PY_VENV)/.deps-stamp

MCP_PY1 := server/internal/mcp/testdata/python-v1
MCP_PY1_VENV := $(CURDIR)/.venv-mcp-v1
MCP_PY1_STAMP := $(MCP_PY1_VENV)/.deps-stamp

.PHONY: mcp-py-deps mcp-py1-deps test-mcp-python

mcp-py-deps: $(MCP_PY_STAMP)
mcp-py1-deps: $(MCP_PY1_STAMP)

$(MCP_PY_STAMP): $(MCP_PY)/requirements.txt
	@test -x $(MCP_PY_VENV)/bin/python || $(PYTHON3) -m venv $(MCP_PY_VENV)
	$(MCP_PY_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(MCP_PY)/requirements.txt
	@touch $@

$(MCP_PY1_STAMP): $(MCP_PY1)/requirements.txt
	@test -x $(MCP_PY1_VENV)/bin/python || $(PYTHON3) -m venv $(MCP_PY1_VENV)
	$(MCP_PY1_VENV)/bin/python -m pip --disable-pip-version-check --no-input install -q -r $(MCP_PY1)/requirements.txt
	@touch $@

test-mcp-python: build mcp-py-deps mcp-py1-deps
	cd $(MCP_PY) && SKILLS_BIN=$(BIN)/skills $(MCP_PY_VENV)/bin/python -m pytest -q
	cd $(MCP_PY1) && SKILLS_BIN=$(BIN)/skills $(MCP_PY1_VENV)/bin/python -m pytest -q

TEST_TARGETS += test-mcp-python
