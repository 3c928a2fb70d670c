"""A fresh `skills --standalone` for the Python client tests (shared by
python-clients/ and python-v1/, which run in separate virtualenvs)."""

import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[5]
BIN = Path(os.environ.get("SKILLS_BIN", REPO / "bin" / "skills"))

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
