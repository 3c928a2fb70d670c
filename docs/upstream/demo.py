"""The upstream README's Python example, corrected for iii-sdk 0.24.4 - 0.25 (see ../coming-from-upstream.md).

Run: III_URL=ws://127.0.0.1:49134 python demo.py   (make test-dist runs it)
"""

import os
import signal
from typing import Any

from iii import register_worker

iii = register_worker(os.environ.get("III_URL", "ws://localhost:49134"))


def guide(_input: Any) -> dict[str, str]:
    return {"content": "# Demo guide\n\nThe long-form docs for the demo worker."}


def greet_prompt(input: dict[str, Any]) -> dict[str, str]:
    name = input.get("name", "world")
    return {"content": f"Greet {name} warmly."}


iii.register_function("demo::guide", guide)
iii.register_function("demo::greet_prompt", greet_prompt)

iii.trigger(
    {
        "function_id": "skills::register",
        "payload": {
            "id": "demo",
            "skill": "# demo\n\nA demo worker.\n\nSee [`guide`](iii://fn/demo/guide) for the long version.\n",
        },
    }
)
iii.trigger(
    {
        "function_id": "prompts::register",
        "payload": {
            "name": "greet",
            "description": "Compose a greeting.",
            "arguments": [{"name": "name", "description": "Who to greet", "required": True}],
            "function_id": "demo::greet_prompt",
        },
    }
)
print("demo registered", flush=True)
signal.sigwait({signal.SIGINT, signal.SIGTERM})
iii.shutdown()
