"""The conformance driver (``python -m iii_skills._driver``) against the real registry."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from itertools import count
from typing import Any

import pytest
from iii.iii import III

import iii_skills

from .conftest import REPO, Server, call, free_port, wait_until

GAVE_UP = "skills handshake gave up; install / start it and restart this worker"


class Driver:
    """A driver subprocess: send commands, collect replies and events."""

    def __init__(self, url: str) -> None:
        env = dict(os.environ, III_URL=url)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "iii_skills._driver"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._ids = count(1)
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.replies: dict[Any, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def _pump(self, timeout: float) -> bool:
        try:
            message = self._lines.get(timeout=timeout)
        except queue.Empty:
            return False
        if message is None:
            return False
        if "event" in message:
            self.events.append(message)
        else:
            self.replies[message.get("id")] = message
        return True

    def write(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def send(self, cmd: str, **arguments: Any) -> int:
        """Frame a command as DRIVER.md writes it: ``{"id": <int>, "cmd": ..., ...arguments}``."""
        command_id = next(self._ids)
        self.write(json.dumps({"id": command_id, "cmd": cmd, **arguments}))
        return command_id

    def reply(self, command_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while command_id not in self.replies:
            if time.monotonic() > deadline or (
                not self._pump(0.1) and self.process.poll() is not None and self._lines.empty()
            ):
                raise AssertionError(
                    f"no reply to command {command_id}; stderr:\n{''.join(self.stderr)}"
                )
        return self.replies.pop(command_id)

    def ok(self, cmd: str, **arguments: Any) -> Any:
        answer = self.reply(self.send(cmd, **arguments))
        assert answer["ok"] is True, answer
        return answer["result"]

    def error(self, cmd: str, **arguments: Any) -> str:
        answer = self.reply(self.send(cmd, **arguments))
        assert answer["ok"] is False, answer
        assert set(answer) == {"id", "ok", "error"}
        message: str = answer["error"]
        return message

    def wait_event(self, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if predicate(event):
                    return event
            if time.monotonic() > deadline:
                raise AssertionError(f"no matching event in {self.events}")
            self._pump(0.1)

    def exit_code(self, timeout: float = 20.0) -> int:
        code = self.process.wait(timeout=timeout)
        while self._pump(0.05):
            pass
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def driver(server: Server) -> Any:
    d = Driver(server.url)
    yield d
    d.kill()


def test_driver_session(driver: Driver, observer: III, uid: str) -> None:
    assert driver.ok("hello") == {"sdk": "python", "version": iii_skills.__version__}
    assert driver.error("nope").startswith("unknown command")
    driver.write("this is not json")
    assert driver.reply(None)["ok"] is False
    assert driver.ok("configure", backoff={"initial_ms": 50, "max_ms": 200, "give_up_ms": 20000}) is None

    driver.write('{"id": 99}')
    assert driver.reply(99)["error"] == 'bad command line: missing "cmd" (the command name, a string)'

    assert driver.error("skill", skill_id="", markdown="# x") == "id must be non-empty"
    assert driver.error("skill", skill_id="fn/x", markdown="# x") == (
        'id may not have "fn" as its first segment (reserved as the iii://fn/ '
        'section-URI marker): "fn/x"'
    )
    assert driver.error("skill", skill_id="x") == 'skill: missing argument "markdown" (a string)'
    assert driver.error("skill", markdown="# x") == 'skill: missing argument "skill_id" (a string)'
    assert driver.error("function", fixture="echo", function_id=7) == (
        'function: argument "function_id" must be a string, got 7'
    )
    assert driver.ok("skill", skill_id=f"drv-{uid}", markdown="# Driver\n\nA skill.\n") is None
    assert driver.ok("skill", skill_id=f"drv-{uid}/leaf", markdown="# Leaf") is None

    assert driver.ok("section", path=f"drv{uid}/status", output={"up": True, "n": 2}) == {
        "uri": f"iii://fn/drv{uid}/status"
    }
    assert driver.ok("section", path=f"drv{uid}/text", output="# Text") == {
        "uri": f"iii://fn/drv{uid}/text"
    }
    assert driver.error("section", path="state/set", output=1) == (
        "Function 'state::set' is in an internal namespace and cannot back a skill resource"
    )

    assert driver.ok("prompt", fixture="send-email", name=f"send-{uid}") == {
        "function_id": f"prompt::send-{uid}"
    }
    assert driver.ok("prompt", fixture="count-words", name=f"count-{uid}") == {
        "function_id": f"prompt::count-{uid}"
    }
    assert driver.ok("prompt", fixture="dialogue", name=f"dialogue-{uid}") == {
        "function_id": f"prompt::dialogue-{uid}"
    }
    assert driver.error("prompt", fixture="send-email", name="Bad Name").startswith(
        "name may only contain lowercase ASCII letters"
    )
    assert driver.error("prompt", fixture="nope").startswith("unknown prompt fixture")
    assert driver.ok("function", fixture="echo", function_id=f"drv::echo-{uid}") is None
    assert driver.ok("subscribe", kind="skills") is None
    assert driver.ok("subscribe", kind="prompts") is None
    assert driver.error("subscribe", kind="other").startswith("kind must be")

    assert driver.ok("start") == {"registered": True, "rejected": []}
    driver.wait_event(lambda e: e["event"] == "registered")
    assert driver.error("configure", backoff={"initial_ms": 1}) == "configure must come before start"
    driver.wait_event(
        lambda e: e == {"event": "skill_change", "op": "register", "id": f"drv-{uid}/leaf"}
    )
    driver.wait_event(
        lambda e: e == {"event": "prompt_change", "op": "register", "name": f"dialogue-{uid}"}
    )
    assert any(e["event"] == "log" and e["level"] == "info" for e in driver.events)

    # What the registry serves from the driver's content.
    read = call(observer, "skills::resources-read", {"uri": f"iii://fn/drv{uid}/status"})
    assert read["contents"][0]["text"] == '{\n  "n": 2,\n  "up": true\n}'
    rendered = call(
        observer,
        "prompts::mcp-get",
        {"name": f"send-{uid}", "arguments": {"to": "a@b.c", "subject": "Hi"}},
    )
    assert rendered["messages"][0]["content"]["text"] == (
        'Compose an email to a@b.c with the subject "Hi".'
    )
    with pytest.raises(Exception, match=f'prompt "count-{uid}": missing required argument "limit"'):
        call(observer, "prompts::mcp-get", {"name": f"count-{uid}", "arguments": {}})
    assert call(observer, f"drv::echo-{uid}", {"message": "ab", "repeat": 2}) == {"echo": "abab"}
    listed = call(observer, "engine::functions::list", {})["functions"]
    (echo_entry,) = [f for f in listed if f["function_id"] == f"drv::echo-{uid}"]
    assert echo_entry["request_format"]["type"] == "object"
    assert sorted(echo_entry["request_format"]["required"]) == ["message", "repeat"]
    assert echo_entry["response_format"]["required"] == ["echo"]

    assert driver.ok("close", unregister=True) is None
    assert driver.exit_code() == 0
    skills = {s["id"] for s in call(observer, "skills::list", {})["skills"]}
    assert f"drv-{uid}" not in skills and f"drv-{uid}/leaf" not in skills
    prompts = {p["name"] for p in call(observer, "prompts::list", {})["prompts"]}
    assert f"send-{uid}" not in prompts


def test_driver_start_without_wait_and_stdin_close(driver: Driver, observer: III, uid: str) -> None:
    assert driver.ok("skill", skill_id=f"nowait-{uid}", markdown="# No wait") is None
    assert driver.ok("start", wait=False) is None
    driver.wait_event(lambda e: e["event"] == "registered")
    wait_until(
        lambda: f"nowait-{uid}" in {s["id"] for s in call(observer, "skills::list", {})["skills"]},
        what="the skill",
    )
    assert driver.process.stdin is not None
    driver.process.stdin.close()
    assert driver.exit_code() == 0
    # stdin closing is not a `close` with unregister: the skill stays
    assert f"nowait-{uid}" in {s["id"] for s in call(observer, "skills::list", {})["skills"]}
    call(observer, "skills::unregister", {"id": f"nowait-{uid}"})


def test_driver_gives_up(server: Server) -> None:
    driver = Driver(f"ws://127.0.0.1:{free_port()}")
    try:
        driver.ok("configure", backoff={"initial_ms": 20, "max_ms": 50, "give_up_ms": 100})
        driver.ok("skill", skill_id="nowhere", markdown="# nowhere")
        assert driver.ok("start") == {"registered": False, "rejected": []}
        driver.wait_event(lambda e: e["event"] == "gave_up")
        driver.wait_event(lambda e: e == {"event": "log", "level": "warn", "message": GAVE_UP})
        assert driver.ok("close", unregister=False) is None
        assert driver.exit_code() == 0
    finally:
        driver.kill()


def test_driver_answers_start_with_the_engine_address_error_when_iii_url_is_malformed() -> None:
    driver = Driver("ws://engine:99999")
    try:
        assert driver.ok("hello")["sdk"] == "python"
        assert driver.error("start", wait=True) == (
            'invalid engine URL "ws://engine:99999" (from III_URL): the port is not a number '
            "from 1 to 65535; expected ws://host:port or wss://host:port"
        )
        assert driver.ok("hello")["sdk"] == "python"  # still answering
        assert driver.ok("close", unregister=False) is None
        assert driver.exit_code() == 0
    finally:
        driver.kill()
