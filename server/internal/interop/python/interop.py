"""Interop script for the official Python iii-sdk against our embedded engine.

interop_test.go runs it with III_URL set, reads the JSON lines it prints on
stdout and plays the Go side (functions go::echo / go::done, trigger type
go::ticks). Any failed expectation exits non-zero with the reason on stderr.
"""

import json
import os
import sys
import threading
import traceback

from iii import InitOptions, register_worker


def say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    url = os.environ["III_URL"]
    iii = register_worker(url, InitOptions(worker_name="interop-python"))

    def echo(data):
        return {"from": "python", "got": data}

    iii.register_function("python::echo", echo, description="Echo the payload back, tagged with the runtime")

    ticked = threading.Event()
    tick_payload: dict = {}

    def on_tick(data):
        tick_payload.update(data)
        ticked.set()
        return None

    iii.register_function("python::on-tick", on_tick)

    echoed = iii.trigger({"function_id": "go::echo", "payload": {"msg": "hi from python"}, "timeout_ms": 10000})
    assert echoed["from"] == "go", echoed
    assert echoed["got"]["msg"] == "hi from python", echoed

    iii.register_trigger({"type": "go::ticks", "function_id": "python::on-tick", "config": {"label": "python"}})

    value = {"n": 1, "text": "é ✓", "nested": {"list": [1, 2, 3]}}
    result = iii.trigger({"function_id": "state::set", "payload": {"scope": "interop-python", "key": "k1", "value": value}})
    assert result["new_value"] == value, result
    got = iii.trigger({"function_id": "state::get", "payload": {"scope": "interop-python", "key": "k1"}})
    assert got == value, got
    missing = iii.trigger({"function_id": "state::get", "payload": {"scope": "interop-python", "key": "missing"}})
    assert missing is None, missing
    listed = iii.trigger({"function_id": "state::list", "payload": {"scope": "interop-python"}})
    assert listed == [value], listed

    say({"step": "ready"})
    if not ticked.wait(15):
        raise AssertionError("timed out waiting for the go::ticks trigger to fire")
    assert tick_payload.get("tick") == 1, tick_payload
    iii.trigger({"function_id": "go::done", "payload": {"runtime": "python", "tick": 1}, "timeout_ms": 10000})
    say({"step": "done"})
    iii.shutdown()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # report any failure with its trace, exit non-zero
        sys.stderr.write("interop-python failed:\n" + traceback.format_exc())
        sys.exit(1)
