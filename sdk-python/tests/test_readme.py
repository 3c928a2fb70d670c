"""The README's program is copy-and-run code: it runs as written against the
real registry (publishes, unregisters on Ctrl-C) and, with a malformed
III_URL, fails at once naming it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from iii.iii import III

from .conftest import REPO, Server, call


def readme_program() -> str:
    readme = (REPO / "sdk-python" / "README.md").read_text(encoding="utf-8")
    for block in readme.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        if "register_worker(" in code:
            return code
    raise AssertionError("sdk-python/README.md has no ```python block with the program")


def test_readme_program_publishes_and_cleans_up(server: Server, observer: III, tmp_path: Path) -> None:
    program = tmp_path / "publish.py"
    program.write_text(readme_program(), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(program)],
        cwd=tmp_path,
        env=dict(os.environ, III_URL=server.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        while True:
            try:
                line = lines.get(timeout=30)
            except queue.Empty:
                raise AssertionError("the README program did not publish:\n" + "".join(output)) from None
            if line.startswith("published resend"):
                break
        ids = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
        assert {"resend", "resend/email", "resend/email/send"} <= ids
        assert "# Resend health" in call(observer, "skill::fetch", {"uri": "iii://fn/resend/health"})
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0, "".join(output)
        left = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
        assert not left & {"resend", "resend/email", "resend/email/send"}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_readme_program_fails_at_once_with_a_malformed_url(tmp_path: Path) -> None:
    program = tmp_path / "publish.py"
    program.write_text(readme_program(), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(program)],
        cwd=tmp_path,
        env=dict(os.environ, III_URL="localhost:49134"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert 'invalid engine URL "localhost:49134" (from III_URL): it has no scheme' in run.stderr


