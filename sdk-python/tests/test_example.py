"""examples/python/resend.py runs against the real registry and publishes what it promises."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading

from iii.iii import III

from .conftest import REPO, Server, call, wait_until

EXAMPLE = REPO / "examples" / "python" / "resend.py"


def test_resend_example(server: Server, observer: III) -> None:
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE)],
        cwd=REPO,
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
                raise AssertionError("the example did not report registration:\n" + "".join(output))
            if line.startswith("resend: registered"):
                break

        skills = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
        assert {"resend-python", "resend-python/email", "resend-python/email/send"} <= skills
        fetched = call(observer, "skill::fetch", {"uris": ["iii://resend-python", "iii://fn/resend-python/health"]})
        assert "[`health`](iii://fn/resend-python/health)" in fetched
        assert "# Resend health\n\nAPI: ok." in fetched
        send = call(observer, "skills::resources-read", {"uri": "iii://resend-python/email/send"})
        assert send["contents"][0]["text"].startswith("# resend-python/email/send\n")
        rendered = call(
            observer,
            "prompts::mcp-get",
            {"name": "send-email-python", "arguments": {"to": "a@b.c", "subject": "Hi"}},
        )
        assert rendered["messages"][0]["content"]["text"] == (
            'Compose an email to a@b.c with the subject "Hi". Be concise and friendly.'
        )
        arguments = [
            p["arguments"]
            for p in call(observer, "prompts::mcp-list", {})["prompts"]
            if p["name"] == "send-email-python"
        ]
        assert arguments == [
            [
                {"name": "to", "required": True, "description": "Recipient address"},
                {"name": "subject", "required": True, "description": "Subject line"},
            ]
        ]

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0, "".join(output)
        # Like every example, it unregistered what it published on Ctrl-C.
        left = [s["id"] for s in call(observer, "skills::list", {})["skills"] if s["id"].startswith("resend-python")]
        assert left == []
        assert "send-email-python" not in {p["name"] for p in call(observer, "prompts::list", {})["prompts"]}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    # The worker is gone: its section function with it.
    def health_gone() -> bool:
        try:
            call(observer, "skills::resources-read", {"uri": "iii://fn/resend-python/health"})
        except Exception as exc:
            return "not found" in str(exc)
        return False

    wait_until(health_gone, what="resend-python::health to disappear with the example")
