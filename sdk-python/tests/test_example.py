"""examples/python/resend.py runs against the real registry and publishes what it promises."""

from __future__ import annotations

from iii.iii import III

from .conftest import REPO, Program, Server, call, wait_until

EXAMPLE = REPO / "examples" / "python" / "resend.py"


def test_resend_example(server: Server, observer: III) -> None:
    program = Program(EXAMPLE, server.url, REPO)
    try:
        program.wait_for_line("resend: registered", "the example did not report registration")
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

        program.stop(timeout=20)
        # Like every example, it unregistered what it published on Ctrl-C.
        left = [s["id"] for s in call(observer, "skills::list", {})["skills"] if s["id"].startswith("resend-python")]
        assert left == []
        assert "send-email-python" not in {p["name"] for p in call(observer, "prompts::list", {})["prompts"]}
    finally:
        program.close()
    # The worker is gone: its section function with it.
    def health_gone() -> bool:
        try:
            call(observer, "skills::resources-read", {"uri": "iii://fn/resend-python/health"})
        except Exception as exc:
            return "not found" in str(exc)
        return False

    wait_until(health_gone, what="resend-python::health to disappear with the example")
