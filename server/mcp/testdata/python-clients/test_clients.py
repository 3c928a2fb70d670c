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
import json
import logging
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.skills.client import SkillsClientExtension
from mcp import StdioServerParameters
from mcp.client.client import Client as MCPClient
from mcp.shared.subscriptions import ResourceUpdated
from skills_ref.validator import validate

REPO = Path(__file__).resolve().parents[4]
BIN = Path(os.environ.get("SKILLS_BIN", REPO / "bin" / "skills"))

STATIC = "# Python steps\n\nHow to drive the registry from Python.\n\nKeep each step small.\n"
DYNAMIC = "# Live report\n\nRendered by [the report section](iii://fn/pyreport/render).\n"
PDF_MD = "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\nlicense: Apache-2.0\n---\n\n# PDF tools\n\nSee [the guide](references/guide.md).\n"
LOGO = b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01"


def write_folder_skill(root: Path) -> None:
    skill = root / "acme" / "pdf-tools"
    (skill / "assets").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "SKILL.md").write_text(PDF_MD)
    (skill / "assets" / "logo.png").write_bytes(LOGO)
    (skill / "references" / "guide.md").write_text("# Guide\n\nStep one.\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self) -> None:
        self.data = tempfile.mkdtemp(prefix="skills-mcp-py-")
        self.folder = Path(self.data) / "skills"
        self.engine = f"ws://127.0.0.1:{free_port()}"
        mcp_port = free_port()
        write_folder_skill(self.folder)
        self.endpoint = f"http://127.0.0.1:{mcp_port}/mcp"
        self.log = open(Path(self.data) / "server.log", "w+")
        self.proc = subprocess.Popen(
            [str(BIN), "--standalone", "--url", self.engine, "--data", self.data,
             "--config", str(Path(self.data) / "none.yaml"), "--mcp-addr", f"127.0.0.1:{mcp_port}", "--skills-folder", str(self.folder), "--skills-folder", str(REPO / "examples" / "skills")],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "SKILLS_MCP_TOKEN": ""})
        deadline = time.time() + 30
        while f"MCP endpoint {self.endpoint}" not in Path(self.log.name).read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("skills did not start:\n" + Path(self.log.name).read_text())
            time.sleep(0.05)

    def trigger(self, function_id: str, payload: dict) -> str:
        out = subprocess.run([str(BIN), "trigger", "--url", self.engine, "--function-id", function_id,
                              "--payload", json.dumps(payload)], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


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
