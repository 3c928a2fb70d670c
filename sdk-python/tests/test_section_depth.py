"""Recursion through a publisher on the official Python client.

The client passes neither a handler's invocation metadata nor its W3C baggage
on to the calls it makes; with OpenTelemetry on (its default) it keeps the
trace: the calls carry a traceparent of the invocation's trace. The registry
counts the reads of a section in flight per trace, so a handler that fetches
its own section is stopped at depth 8 (not 256), and a plain chain of other
sections still works.

The publisher runs in a process of its own, as in production: the client's
telemetry is process-wide, and the other tests keep it off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from .conftest import Server

PUBLISHER = textwrap.dedent(
    """
    import json, os, sys, time, uuid
    from iii import InitOptions
    from iii.iii import III
    from iii_helpers.observability import OtelConfig

    url = os.environ["III_URL"]
    ns = "pydepth" + uuid.uuid4().hex[:8]
    iii = III(url, InitOptions(worker_name=ns, otel=OtelConfig(enabled=True, metrics_enabled=False)))
    calls = {"self": 0}

    async def fetch(uri):
        return await iii.trigger_async({"function_id": "skill::fetch", "payload": {"uri": uri}, "timeout_ms": 20000})

    async def self_handler(data):
        calls["self"] += 1
        return await fetch(f"iii://fn/{ns}/self")

    async def leaf(data):
        return "# leaf"

    async def outer(data):
        return await fetch(f"iii://fn/{ns}/leaf")

    iii.register_function(f"{ns}::self", self_handler)
    iii.register_function(f"{ns}::leaf", leaf)
    iii.register_function(f"{ns}::outer", outer)

    def call(uri):
        try:
            return {"ok": iii.trigger({"function_id": "skill::fetch", "payload": {"uri": uri}, "timeout_ms": 30000})}
        except Exception as e:
            return {"error": str(e)}

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = iii.trigger({"function_id": "engine::functions::list", "payload": {}, "timeout_ms": 2000})
        if f"{ns}::outer" in {f["function_id"] for f in out["functions"]}:
            break
        time.sleep(0.05)
    result = {"ns": ns, "self": call(f"iii://fn/{ns}/self"), "outer": call(f"iii://fn/{ns}/outer")}
    result["self_calls"] = calls["self"]
    print("RESULT " + json.dumps(result), flush=True)
    iii.shutdown()
    """
)


def test_section_recursion_through_the_python_client_stops_at_8(server: Server) -> None:
    env = {**os.environ, "III_URL": server.url}
    env.pop("OTEL_ENABLED", None)
    proc = subprocess.run(
        [sys.executable, "-c", PUBLISHER], env=env, capture_output=True, text=True, timeout=120
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"publisher printed no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1][len("RESULT ") :])
    ns = result["ns"]
    err = result["self"].get("error", "")
    assert (
        f"section nesting too deep: 9 nested section reads (max 8): iii://fn/{ns}/self read 9 times at once"
        in err
    ), result
    assert result["self_calls"] == 8, result
    # A chain without recursion is not affected.
    assert str(result["outer"].get("ok", "")).endswith("# leaf"), result
