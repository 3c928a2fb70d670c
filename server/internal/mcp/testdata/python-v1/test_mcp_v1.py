"""The official Python `mcp` client, latest 1.x, against a fresh
`skills --standalone`: over Streamable HTTP (2025-11-25, the newest revision
1.x speaks) and over stdio (`skills mcp --stdio`) it lists and reads the
registry's resources, skill:// included, and calls the skill tools without
logging a warning (go-sdk's SSE priming event used to log "Unknown SSE
event: prime" on every request) or raising a Python warning (pytest.ini
turns them into errors).
"""

import logging
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python-clients"))
from skills_server import BIN, PDF_MD, Server  # noqa: E402

STEPS = "# Python v1 steps\n\nHow the 1.x client reads the registry.\n"


@pytest.fixture(scope="module")
def server():
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make build` (or set SKILLS_BIN)")
    srv = Server()
    srv.trigger("skills::register", {"id": "pyv1steps", "skill": STEPS})
    yield srv
    srv.stop()


def test_client_is_1x():
    assert version("mcp").startswith("1."), version("mcp")


async def _exercise(session: ClientSession) -> None:
    init = await session.initialize()
    assert init.protocolVersion == "2025-11-25"
    assert "skills/list" in (init.instructions or "")
    uris = []
    cursor = None
    while True:
        page = await session.list_resources(cursor=cursor)
        uris += [str(r.uri) for r in page.resources]
        if not page.nextCursor:
            break
        cursor = page.nextCursor
    assert {"iii://skills", "iii://pyv1steps", "skill://pyv1steps/SKILL.md", "skill://acme/pdf-tools/SKILL.md"} <= set(uris)
    read = await session.read_resource("skill://pyv1steps/SKILL.md")
    assert read.contents[0].text.endswith(STEPS)
    folder = await session.read_resource("skill://acme/pdf-tools/SKILL.md")
    assert folder.contents[0].text == PDF_MD
    names = [t.name for t in (await session.list_tools()).tools]
    assert "list_skills" in names and "read_skill" in names
    listed = await session.call_tool("list_skills", {})
    assert not listed.isError and "skill://pyv1steps/SKILL.md" in listed.content[0].text


def _no_warnings(caplog) -> None:
    warnings = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []


async def test_http_quiet(server, caplog):
    caplog.set_level(logging.DEBUG)
    async with streamable_http_client(server.endpoint) as (read, write, _):
        async with ClientSession(read, write) as session:
            await _exercise(session)
    _no_warnings(caplog)


async def test_stdio_quiet(server, caplog):
    caplog.set_level(logging.DEBUG)
    params = StdioServerParameters(command=str(BIN), args=["mcp", "--stdio", "--url", server.engine, "--log-level", "warn"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await _exercise(session)
    _no_warnings(caplog)
