"""agentskills-testing's ProviderConformanceSuite (48 tests) against
`skills --standalone` through the official MCP Python client, on both
protocol revisions, and against the reference server
(agentskills-mcp-server) with the same provider as a control.

The fixture folder holds exactly the suite's contract skill
(agentskills_testing.CONTRACT). A test the reference server fails too is
the suite's or the provider's, not the registry's. All 48 pass on both
revisions and against the reference (144 tests): there is no baseline of
expected failures. Before the registry decoded a Base64-wrapped Mcp-Name
(server/internal/mcp/mcpname.go), the three reads of a resource named
"ok\x00.md" failed on 2026-07-28 with -32020 header mismatch (45/48).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_asyncio
from mcp import Client

from agentskills_testing import ProviderConformanceSuite
from agentskills_testing.conformance import (
    ASSET_BYTES, ASSET_NAME, REFERENCE_BYTES, REFERENCE_NAME, SCRIPT_BYTES, SCRIPT_NAME, SKILL_ID,
)
from mcp_provider import McpSkillProvider

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[4]
BIN = Path(os.environ.get("SKILLS_BIN", REPO / "bin" / "skills"))
SKILL_MD = (f"---\nname: {SKILL_ID}\ndescription: The skill of the provider conformance suite.\n---\n\n"
            "# Conformance skill\n\nRead [the notes](references/notes.md).\n")


def write_contract_skill(root: Path) -> None:
    skill = root / SKILL_ID
    for sub, name, data in (("references", REFERENCE_NAME, REFERENCE_BYTES), ("scripts", SCRIPT_NAME, SCRIPT_BYTES),
                            ("assets", ASSET_NAME, ASSET_BYTES)):
        (skill / sub).mkdir(parents=True, exist_ok=True)
        (skill / sub / name).write_bytes(data)
    (skill / "SKILL.md").write_text(SKILL_MD)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def folder():
    root = Path(tempfile.mkdtemp(prefix="agentskills-testing-")) / "skills"
    write_contract_skill(root)
    return root


@pytest.fixture(scope="session")
def endpoint(folder):
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make build` (or set SKILLS_BIN)")
    data = tempfile.mkdtemp(prefix="agentskills-testing-data-")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = open(Path(data) / "server.log", "w+")
    proc = subprocess.Popen(
        [str(BIN), "--standalone", "--url", f"ws://127.0.0.1:{free_port()}", "--data", data,
         "--config", str(Path(data) / "none.yaml"), "--mcp-addr", f"127.0.0.1:{port}", "--skills-folder", str(folder)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "SKILLS_MCP_TOKEN": ""})
    deadline = time.time() + 30
    while f"MCP endpoint {url}" not in Path(log.name).read_text():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("skills did not start:\n" + Path(log.name).read_text())
        time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


async def _serve(target, mode: str):
    """Opens a Client in a task of its own (anyio requires its scopes to be
    left by the task that entered them), hands it over, closes it on demand."""
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def run():
        try:
            async with Client(target, mode=mode) as c:
                ready.set_result(c)
                await stop.wait()
        except BaseException as e:  # noqa: BLE001 - handed to the fixture
            if not ready.done():
                ready.set_exception(e)
            else:
                raise

    task = asyncio.create_task(run())
    client = await ready
    return client, stop, task


class _Over:
    mode: str

    @pytest_asyncio.fixture
    async def provider(self, endpoint):
        client, stop, task = await _serve(endpoint, self.mode)
        assert client.protocol_version == (self.mode if self.mode != "legacy" else "2025-11-25")
        yield McpSkillProvider(client)
        stop.set()
        await task


class TestSkillsOver20260728(_Over, ProviderConformanceSuite):
    mode = "2026-07-28"


class TestSkillsOver20251125(_Over, ProviderConformanceSuite):
    mode = "legacy"


@pytest.fixture(scope="session")
def reference_endpoint(folder):
    """agentskills-mcp-server over Streamable HTTP (reference_server.py)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="reference-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, str(HERE / "reference_server.py"), str(folder), SKILL_ID, str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("the reference server did not start:\n" + Path(log.name).read_text())
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


class TestReferenceServer(_Over, ProviderConformanceSuite):
    """The control: agentskills-mcp-server, the same provider, over HTTP
    (it serves the Skills extension on 2026-07-28 only)."""

    mode = "2026-07-28"

    @pytest.fixture
    def endpoint(self, reference_endpoint):
        return reference_endpoint
