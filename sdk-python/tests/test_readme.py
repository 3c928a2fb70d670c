"""The README's program is copy-and-run code: it runs as written against the
real registry (publishes, unregisters on Ctrl-C) and, with a malformed
III_URL, fails at once naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from iii.iii import III

from .conftest import REPO, Program, Server, call


def readme_program() -> str:
    readme = (REPO / "sdk-python" / "README.md").read_text(encoding="utf-8")
    for block in readme.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        if "register_worker(" in code:
            return code
    raise AssertionError("sdk-python/README.md has no ```python block with the program")


def test_readme_program_publishes_and_cleans_up(server: Server, observer: III, tmp_path: Path) -> None:
    script = tmp_path / "publish.py"
    script.write_text(readme_program(), encoding="utf-8")
    program = Program(script, server.url, tmp_path)
    try:
        program.wait_for_line("published resend", "the README program did not publish")
        ids = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
        assert {"resend", "resend/email", "resend/email/send"} <= ids
        assert "# Resend health" in call(observer, "skill::fetch", {"uri": "iii://fn/resend/health"})
        program.stop(timeout=30)
        left = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
        assert not left & {"resend", "resend/email", "resend/email/send"}
    finally:
        program.close()


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


