"""Real Python MCP clients against a fresh `skills --standalone`.

* FastMCP's client (fastmcp-slim[client]) speaks the MCP Skills extension:
  skills/list, skills/get, then read_skill, which reads every file and checks
  its size, sha256 digest and frontmatter against the entry. The skill it
  rebuilds is written back to disk and must pass the Agent Skills reference
  validator (skills-ref).
* The official `mcp` client over HTTP (legacy 2025-11-25 handshake and
  2026-07-28) and stdio logs no warnings (go-sdk's SSE priming event used to
  log "Unknown SSE event: prime" on every request).
"""

import anyio
import logging
from pathlib import Path

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.skills.client import SkillsClientExtension
from mcp import StdioServerParameters
from mcp.client.client import Client as MCPClient
from mcp.shared.subscriptions import ResourceUpdated
from skills_ref.validator import validate

from skills_server import BIN, LOGO, PDF_MD, Server

STATIC = "# Python steps\n\nHow to drive the registry from Python.\n\nKeep each step small.\n"
DYNAMIC = "# Live report\n\nRendered by [the report section](iii://fn/pyreport/render).\n"


@pytest.fixture(scope="module")
def server():
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make build` (or set SKILLS_BIN)")
    srv = Server()
    srv.trigger("skills::register", {"id": "pysteps", "skill": STATIC})
    srv.trigger("skills::register", {"id": "pyteam/live-report", "skill": DYNAMIC})
    yield srv
    srv.stop()


async def test_fastmcp_skills_extension(server, tmp_path):
    async with FastMCPClient(server.endpoint, extensions=[SkillsClientExtension()]) as client:
        entries = {e.uri: e for e in await client.list_skills()}
        assert {"skill://pysteps/SKILL.md", "skill://pyteam/live-report/SKILL.md"} <= set(entries)
        assert entries["skill://pyteam/live-report/SKILL.md"].resources == "dynamic"
        assert entries["skill://pyteam/live-report/SKILL.md"].frontmatter.root["name"] == "live-report"

        entry = await client.get_skill("skill://pysteps/SKILL.md")
        assert entry.frontmatter.root == {"name": "pysteps", "description": "How to drive the registry from Python."}

        # read_skill verifies every file's size and digest and the frontmatter.
        skill = await client.read_skill("skill://pysteps/SKILL.md")
        assert skill.name == "pysteps"
        assert skill.files["SKILL.md"].decode().endswith(STATIC)
        out = skill.to_directory(tmp_path / skill.name)
        assert validate(Path(out)) == []

        # A folder skill with a binary file: every file verified, written
        # back byte for byte, valid for the Agent Skills reference validator.
        folder_skill = await client.read_skill("skill://acme/pdf-tools/SKILL.md")
        assert folder_skill.files["assets/logo.png"] == LOGO
        assert folder_skill.files["SKILL.md"].decode() == PDF_MD
        out = folder_skill.to_directory(tmp_path / "folder" / folder_skill.name)
        assert (out / "assets" / "logo.png").read_bytes() == LOGO
        assert validate(Path(out)) == []

        # Every skill with a static manifest (the examples/skills folders
        # included) is read, verified, written back and validated.
        assert "skill://pdf-processing/SKILL.md" in entries
        for uri, e in entries.items():
            if e.resources == "dynamic":
                continue
            sk = await client.read_skill(uri)
            dest = sk.to_directory(tmp_path / "all" / uri.removeprefix("skill://").removesuffix("/SKILL.md"))
            assert validate(Path(dest)) == [], uri

        # A dynamic skill has no static manifest to verify.
        with pytest.raises(ValueError, match="no static manifest"):
            await client.read_skill("skill://pyteam/live-report/SKILL.md")


def _no_warnings(caplog) -> None:
    warnings = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []


async def _exercise(client: MCPClient) -> None:
    resources = await client.list_resources()
    uris = [str(r.uri) for r in resources.resources]
    assert "iii://pysteps" in uris and "skill://pysteps/SKILL.md" in uris
    read = await client.read_resource("skill://pysteps/SKILL.md")
    assert read.contents[0].text.endswith(STATIC)
    tools = await client.list_tools()
    names = [t.name for t in tools.tools]
    assert "list_skills" in names and "read_skill" in names
    listed = await client.call_tool("list_skills", {})
    assert "skill://pysteps/SKILL.md" in listed.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_python_mcp_http_quiet(server, caplog, mode):
    caplog.set_level(logging.DEBUG)
    async with MCPClient(server.endpoint, mode=mode) as client:
        await _exercise(client)
    _no_warnings(caplog)


async def test_python_mcp_stdio_quiet(server, caplog):
    caplog.set_level(logging.DEBUG)
    params = StdioServerParameters(command=str(BIN), args=["mcp", "--stdio", "--url", server.engine, "--log-level", "warn"])
    async with MCPClient(params) as client:
        await _exercise(client)
    _no_warnings(caplog)


async def test_file_change_reaches_the_client(server):
    """Editing a folder skill's file on disk is resources/updated for it; the
    extension client then reads the skill again against its new digests."""
    guide = "skill://acme/pdf-tools/references/guide.md"
    async with MCPClient(server.endpoint, mode="2026-07-28") as client:
        async with client.listen(resources_list_changed=True, resource_subscriptions=[guide]) as sub:
            (server.folder / "acme" / "pdf-tools" / "references" / "guide.md").write_text("# Guide\n\nStep two.\n")
            with anyio.fail_after(10):
                async for event in sub:
                    if isinstance(event, ResourceUpdated) and event.uri == guide:
                        break
    async with FastMCPClient(server.endpoint, extensions=[SkillsClientExtension()]) as client:
        skill = await client.read_skill("skill://acme/pdf-tools/SKILL.md", cache_mode="bypass")
        assert skill.files["references/guide.md"] == b"# Guide\n\nStep two.\n"
