"""The upstream "resend" publisher, in Python, under its own namespace ``resend-python``
(the Go and Node examples use ``resend-go`` and ``resend-node``, so all three can run at once).

Publishes a small skill tree (a router, a group, a leaf), a live health
section at iii://fn/resend-python/health and a typed `send-email-python` slash-command,
then keeps serving them until Ctrl-C.

Run against the standalone registry (`make run` in another terminal):

    make example-python                      # or: .venv/bin/python examples/python/resend.py

The engine address comes from III_URL (default ws://127.0.0.1:49134).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType

from iii import InitOptions, register_worker
from pydantic import BaseModel, Field

from iii_skills import Publisher, SkillChange, engine_url

HERE = Path(__file__).resolve().parent

ROUTER = """# resend-python

Email provider integration.

- [`email`](iii://resend-python/email) — sending and tracking

Live status check: [`health`](iii://fn/resend-python/health)
"""

EMAIL = """# resend-python/email

Email flows.

- [`send`](iii://resend-python/email/send) — outbound
- [`track`](iii://resend-python/email/track) — webhooks + status
"""


class SendEmailArgs(BaseModel):
    """Arguments of the /send-email-python slash-command."""

    to: str = Field(description="Recipient address")
    subject: str = Field(description="Subject line")


def build(publisher: Publisher, started_at: float | None = None) -> None:
    """Declare everything this worker publishes."""
    booted = time.monotonic() if started_at is None else started_at

    # 1. A small top-level router, 2. a mid-level group, 3. the leaf body.
    publisher.skill("resend-python", ROUTER)
    publisher.skill("resend-python/email", EMAIL)
    publisher.skill("resend-python/email/send", (HERE / "docs" / "resend-email-send.md").read_text("utf-8"))
    publisher.skill("resend-python/email/track", (HERE / "docs" / "resend-email-track.md").read_text("utf-8"))

    # 4. A section URI: live function output instead of a stored body.
    @publisher.section("resend-python/health", description="Live operational health for the resend integration.")
    def health() -> dict[str, str]:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        uptime = int(time.monotonic() - booted)
        return {
            "content": f"# Resend health\n\nAPI: ok. Checked at {now}; worker up for {uptime} s."
        }

    # 5. A slash-command whose arguments come from the pydantic model.
    @publisher.prompt(name="send-email-python", description="Compose and send an email")
    def send_email(args: SendEmailArgs) -> dict[str, str]:
        return {
            "content": f'Compose an email to {args.to} with the subject "{args.subject}". '
            "Be concise and friendly."
        }

    # 6. React to registry changes (ours and every other publisher's): logged
    # under "registry", since most of them are not this example's doing.
    @publisher.on_skill_change
    def changed(event: SkillChange) -> None:
        logging.getLogger("registry").info("announced: %s %s", event.op, event.id)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # engine_url(): III_URL, else ws://127.0.0.1:49134; a malformed address raises here, at once
    # (the official client would retry it forever).
    iii = register_worker(engine_url(), InitOptions(worker_name="resend-example"))
    publisher = Publisher(iii)
    build(publisher)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    @publisher.on_registered
    def ready() -> None:
        print(
            "resend: registered resend-python, resend-python/email, resend-python/email/send, "
            "resend-python/email/track, /send-email-python; "
            "serving iii://fn/resend-python/health (Ctrl-C to stop)",
            flush=True,
        )

    publisher.start_in_background()
    stop.wait()
    # Like every example: unregister what this one published
    # (docs/coming-from-upstream.md#the-examples).
    publisher.close(unregister=True)
    iii.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
