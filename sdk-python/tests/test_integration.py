"""The publisher against the real registry (``bin/skills --standalone``)."""

from __future__ import annotations

import logging
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from iii.iii import III
from pydantic import BaseModel, Field

from iii_skills import Backoff, PromptChange, Publisher, SkillChange, is_not_found
from iii_skills._fixtures import count_words, dialogue, echo, send_email
from iii_skills._registrar import _function_ids

from .conftest import SERVER_BIN, Server, call, free_port, new_client, wait_until

FAST = Backoff(initial_delay=0.05, multiplier=2, max_delay=0.2, give_up_after=20)
GAVE_UP = "skills handshake gave up; install / start it and restart this worker"


def skill_ids(client: III) -> set[str]:
    return {row["id"] for row in call(client, "skills::list", {})["skills"]}


def prompt_names(client: III) -> set[str]:
    return {row["name"] for row in call(client, "prompts::list", {})["prompts"]}


def read(client: III, uri: str) -> dict[str, Any]:
    contents = call(client, "skills::resources-read", {"uri": uri})["contents"]
    assert len(contents) == 1
    item: dict[str, Any] = contents[0]
    return item


def mcp_prompt(client: III, name: str) -> dict[str, Any]:
    prompts = call(client, "prompts::mcp-list", {})["prompts"]
    (entry,) = [p for p in prompts if p["name"] == name]
    result: dict[str, Any] = entry
    return result


def test_start_registers_skills_and_prompts(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    publisher.skill(f"t-{uid}", f"# Router {uid}\n\nTop level.\n")
    publisher.skill(f"t-{uid}/leaf", "# Leaf\n\nDeep content.\n")
    publisher.prompt(f"send-email-{uid}", "Compose and send an email", send_email)
    rounds: list[int] = []
    publisher.on_registered(lambda: rounds.append(1))

    assert publisher.start().registered is True
    assert rounds == [1]
    assert {f"t-{uid}", f"t-{uid}/leaf"} <= skill_ids(observer)
    assert read(observer, f"iii://t-{uid}/leaf")["text"] == "# Leaf\n\nDeep content.\n"
    assert mcp_prompt(observer, f"send-email-{uid}") == {
        "name": f"send-email-{uid}",
        "description": "Compose and send an email",
        "arguments": [
            {"name": "to", "required": True, "description": "Recipient address"},
            {"name": "subject", "required": True, "description": "Subject line"},
            {"name": "urgent", "required": False, "description": "Mark as urgent"},
        ],
    }
    publisher.close(unregister=True)


def test_section_uris_serve_handler_output(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)

    class Quota(BaseModel):
        remaining: int
        unit: str

    text = publisher.section(f"s{uid}/text", lambda: "# Plain\n\nmarkdown")
    wrapped = publisher.section(f"s{uid}/wrapped", lambda: {"content": "# Wrapped"})

    @publisher.section(f"s{uid}/model")
    async def model() -> Quota:
        return Quota(remaining=73, unit="percent")

    assert text.uri == f"iii://fn/s{uid}/text"
    wait_until(lambda: read(observer, text.uri)["text"] == "# Plain\n\nmarkdown", what="section")
    assert read(observer, text.uri)["mimeType"] == "text/markdown"
    assert read(observer, wrapped.uri) == {
        "uri": wrapped.uri,
        "mimeType": "text/markdown",
        "text": "# Wrapped",
    }
    served = read(observer, model.uri)
    assert served["mimeType"] == "application/json"
    assert served["text"] == '{\n  "remaining": 73,\n  "unit": "percent"\n}'
    fetched = call(observer, "skill::fetch", {"uris": [wrapped.uri]})
    assert fetched == f"# {wrapped.uri}\n\n# Wrapped"
    publisher.close()


def test_prompts_render_and_validate_arguments(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    publisher.prompt(f"send-{uid}", "Compose and send an email", send_email)
    publisher.prompt(f"count-{uid}", "Limit the answer", count_words)
    publisher.prompt(f"dialogue-{uid}", "Canned dialogue", dialogue)
    assert publisher.start()

    def get(name: str, arguments: Any) -> Any:
        return call(observer, "prompts::mcp-get", {"name": name, "arguments": arguments})

    rendered = get(f"send-{uid}", {"to": "a@b.c", "subject": "Hi", "urgent": "true"})
    assert rendered["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": 'Compose an email to a@b.c with the subject "Hi". Mark it urgent.',
            },
        }
    ]
    assert get(f"count-{uid}", {"limit": "42"})["messages"][0]["content"]["text"] == (
        "Use at most 42 words."
    )
    assert [m["role"] for m in get(f"dialogue-{uid}", None)["messages"]] == ["user", "assistant"]

    with pytest.raises(Exception) as missing:
        get(f"send-{uid}", {"subject": "Hi"})
    assert f'prompt "send-{uid}": missing required argument "to"' in str(missing.value)
    with pytest.raises(Exception) as wrong:
        get(f"count-{uid}", {"limit": "abc"})
    assert f'prompt "count-{uid}": argument "limit" must be an integer, got "abc"' in str(wrong.value)
    publisher.close(unregister=True)


def test_typed_function_contract_is_listed(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    function_id = f"pytest::echo-{uid}"
    publisher.function(function_id, echo, description="Echo")

    def listed() -> dict[str, Any] | None:
        functions = call(observer, "engine::functions::list", {})["functions"]
        for entry in functions:
            if entry["function_id"] == function_id:
                found: dict[str, Any] = entry
                return found
        return None

    wait_until(lambda: listed() is not None, what=f"{function_id} in engine::functions::list")
    entry = listed()
    assert entry is not None
    request, response = entry["request_format"], entry["response_format"]
    assert request["type"] == "object"
    assert set(request["properties"]) == {"message", "repeat"}
    assert sorted(request["required"]) == ["message", "repeat"]
    assert response["type"] == "object"
    assert response["required"] == ["echo"]
    assert call(observer, function_id, {"message": "ab", "repeat": 3}) == {"echo": "ababab"}
    publisher.close()


def test_change_subscriptions_receive_typed_events(iii: III, observer: III, uid: str) -> None:
    watcher = Publisher(iii, backoff=FAST)
    skills: list[SkillChange] = []
    prompts: list[PromptChange] = []
    lock = threading.Lock()

    @watcher.on_skill_change
    def on_skill(event: SkillChange) -> None:
        with lock:
            skills.append(event)

    @watcher.on_prompt_change
    async def on_prompt(event: PromptChange) -> None:
        with lock:
            prompts.append(event)

    # Let the bindings reach the registry before anything changes.
    sentinel = new_client(iii.get_address(), "pytest-sentinel")
    try:

        def bound() -> bool:
            call(sentinel, "skills::register", {"id": f"probe-{uid}", "skill": "# probe"})
            with lock:
                return any(e.id == f"probe-{uid}" for e in skills)

        wait_until(bound, what="the skills::on-change binding")
        publisher = Publisher(sentinel, backoff=FAST)
        publisher.skill(f"c-{uid}", "# changed")
        publisher.prompt(f"p-{uid}", "A prompt", dialogue)
        assert publisher.start()
        publisher.close(unregister=True)
        call(sentinel, "skills::unregister", {"id": f"probe-{uid}"})
    finally:
        sentinel.shutdown()

    def seen() -> bool:
        with lock:
            return (
                SkillChange("unregister", f"c-{uid}") in skills
                and PromptChange("unregister", f"p-{uid}") in prompts
            )

    wait_until(seen, what="the unregister events")
    with lock:
        assert SkillChange("register", f"c-{uid}") in skills
        assert PromptChange("register", f"p-{uid}") in prompts
        assert skills.index(SkillChange("register", f"c-{uid}")) < skills.index(
            SkillChange("unregister", f"c-{uid}")
        )
    watcher.close()


def test_close_with_unregister_removes_content(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    publisher.skill(f"gone-{uid}", "# gone")
    publisher.prompt(f"gone-{uid}", "Goes away", dialogue)
    section = publisher.section(f"gone{uid}/status", lambda: "ok")
    assert publisher.start()
    assert f"gone-{uid}" in skill_ids(observer)
    assert f"gone-{uid}" in prompt_names(observer)

    publisher.close(unregister=True)
    assert f"gone-{uid}" not in skill_ids(observer)
    assert f"gone-{uid}" not in prompt_names(observer)

    def section_gone() -> bool:
        try:
            read(observer, section.uri)
        except Exception as exc:
            return "not found" in str(exc)
        return False

    wait_until(section_gone, what="the section function to be unregistered")


def test_close_without_unregister_keeps_content(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    publisher.skill(f"kept-{uid}", "# kept")
    assert publisher.start()
    publisher.close()
    assert f"kept-{uid}" in skill_ids(observer)
    # The skill belongs to the publisher's connection (still open): only it
    # may remove it.
    call(iii, "skills::unregister", {"id": f"kept-{uid}"})


def test_registry_rejection_is_reported_without_retry(
    iii: III, uid: str, caplog: pytest.LogCaptureFixture
) -> None:
    publisher = Publisher(iii, backoff=FAST)
    publisher.skill(f"ok-{uid}", "# ok")
    # Bypass local validation to see how a refusal by the registry is handled.
    publisher._registrar._items[("skill", "Bad Id")] = {"id": "Bad Id", "skill": "# bad"}
    with caplog.at_level(logging.INFO, logger="iii_skills"):
        assert publisher.start().registered is False
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and 'invalid id (segment 1 of "Bad Id")' in errors[0]
    assert not any("retrying" in r.getMessage() for r in caplog.records)
    publisher.close(unregister=True)


def test_gives_up_when_nothing_answers(caplog: pytest.LogCaptureFixture, server: Server) -> None:
    # `server` only sets III_URL, where the client's telemetry socket goes.
    client = new_client(f"ws://127.0.0.1:{free_port()}", "pytest-nowhere")
    try:
        publisher = Publisher(
            client,
            backoff=Backoff(initial_delay=0.05, multiplier=2, max_delay=0.1, give_up_after=0.5),
            call_timeout=0.1,
        )
        publisher.skill("nowhere", "# nowhere")
        gave_up = threading.Event()
        publisher.on_gave_up(gave_up.set)
        with caplog.at_level(logging.WARNING, logger="iii_skills"):
            assert publisher.start().registered is False
        assert gave_up.is_set()
        assert [r.getMessage() for r in caplog.records if r.name == "iii_skills"] == [GAVE_UP]
        publisher.close()
    finally:
        client.shutdown()


def test_reregisters_after_the_engine_restarts(own_server: Server, uid: str) -> None:
    client = new_client(own_server.url, "pytest-restart")
    publisher = Publisher(client, backoff=FAST)
    publisher.skill(f"r-{uid}", "# survives restarts")
    publisher.prompt(f"r-{uid}", "Survives restarts", dialogue)
    rounds = threading.Semaphore(0)
    publisher.on_registered(rounds.release)
    try:
        assert publisher.start()
        assert rounds.acquire(timeout=5)

        # A new engine with empty state on the same address.
        own_server.stop()
        own_server.start(fresh_data=True)
        observer = new_client(own_server.url, "pytest-restart-observer")
        try:
            assert rounds.acquire(timeout=30), "no registration round after the reconnect"
            wait_until(lambda: f"r-{uid}" in skill_ids(observer), what="the skill after restart")
            assert f"r-{uid}" in prompt_names(observer)
            assert (
                call(observer, "prompts::mcp-get", {"name": f"r-{uid}"})["messages"][1]["role"]
                == "assistant"
            )
        finally:
            observer.shutdown()
    finally:
        publisher.close()
        client.shutdown()


class _Processes:
    """``bin/skills`` processes of one test: an engine alone and registries in
    worker mode beside it, started, killed and restarted like in production."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"ws://127.0.0.1:{free_port()}"
        self.procs: list[subprocess.Popen[bytes]] = []

    def launch(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        # --mcp-addr "": the HTTP listener is not under test and its default
        # port may be taken.
        with (self.root / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                [str(SERVER_BIN), "--url", self.url, "--mcp-addr", "", *args],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        return proc

    def engine_alone(self) -> None:
        """The embedded engine without a registry: nothing serves skills::register."""
        self.launch("engine", "--standalone", "--engine-only", "--data", str(self.root / "data"))

        def up() -> bool:
            return "iii engine listening" in (self.root / "engine.log").read_text("utf-8", "replace")

        wait_until(up, what="the engine alone")

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)


def test_late_registry_is_picked_up(tmp_path: Path, uid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine is up but the registry is not; it arrives while start() retries."""
    procs = _Processes(tmp_path)
    monkeypatch.setenv("III_URL", procs.url)
    procs.engine_alone()
    observer = new_client(procs.url, "pytest-late-observer")
    client = new_client(procs.url, "pytest-late")
    publisher = Publisher(client, backoff=FAST)
    try:
        publisher.skill(f"late-{uid}", "# arrived late")
        registered = threading.Event()
        publisher.on_registered(registered.set)
        publisher.start_in_background()
        # the first rounds fail: nothing serves skills::register
        wait_until(lambda: publisher._registrar._registry_present is False, what="a failed round")
        assert not registered.is_set()

        procs.launch("registry")  # the registry in worker mode, arriving late
        assert registered.wait(30), "the publisher did not register once the registry arrived"
        assert f"late-{uid}" in skill_ids(observer)
    finally:
        publisher.close()
        client.shutdown()
        observer.shutdown()
        procs.stop_all()


def test_reregisters_when_the_registry_comes_back(
    tmp_path: Path, uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry worker is killed and restarted beside a live engine: the
    engine's engine::functions-available events bring the publisher back."""
    procs = _Processes(tmp_path)
    monkeypatch.setenv("III_URL", procs.url)
    procs.engine_alone()
    registry = procs.launch("registry")
    observer = new_client(procs.url, "pytest-back-observer")
    client = new_client(procs.url, "pytest-back")
    publisher = Publisher(client, backoff=FAST)
    # The engine coalesces function changes into one event, so the registry
    # must have been reported present before it is killed.
    seen: list[bool] = []
    on_functions = publisher._registrar._on_functions_available

    def record(data: Any) -> None:
        seen.append("skills::register" in (_function_ids(data) or ()))
        on_functions(data)

    publisher._registrar._on_functions_available = record  # type: ignore[method-assign]
    try:
        publisher.skill(f"back-{uid}", "# comes back")
        rounds = threading.Semaphore(0)
        publisher.on_registered(rounds.release)
        wait_until(lambda: _serves_register(observer), what="the registry worker")
        assert publisher.start()
        assert rounds.acquire(timeout=5)
        # The registry came before the publisher subscribed, so its own event
        # may have gone by: a function registered now brings another one, which
        # lists every function.

        async def nudge(_data: Any) -> None:
            return None

        observer.register_function(f"pytest{uid}::nudge", nudge)
        wait_until(lambda: any(seen), what="an engine::functions-available event naming the registry")

        def registered_at() -> str:
            rows = call(observer, "skills::list", {})["skills"]
            (row,) = [r for r in rows if r["id"] == f"back-{uid}"]
            stamp: str = row["registered_at"]
            return stamp

        first = registered_at()
        registry.kill()  # SIGKILL: gone without unregistering anything
        registry.wait(timeout=10)
        wait_until(lambda: publisher._registrar._registry_present is False, what="the publisher to see the registry leave")
        assert not rounds.acquire(timeout=0.3)

        procs.launch("registry")  # same engine, same state: the skill is still stored
        assert rounds.acquire(timeout=30), "no registration round after the registry returned"
        assert registered_at() != first
    finally:
        publisher.close()
        client.shutdown()
        observer.shutdown()
        procs.stop_all()


def _serves_register(client: III) -> bool:
    functions = call(client, "engine::functions::list", {})["functions"]
    return any(f.get("function_id") == "skills::register" for f in functions)


def test_no_deprecation_output_from_the_client(
    iii: III, uid: str, caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    # iii-sdk 0.25 deprecates register_trigger, which change subscriptions and
    # the registry watch still need; the user never called it, so the
    # publisher keeps the deprecation out of their warnings and logs.
    publisher = Publisher(iii, backoff=FAST)
    publisher.skill(f"dep-{uid}", "# Dep\n\nbody\n")
    publisher.on_skill_change(lambda event: None)
    with caplog.at_level(logging.WARNING):
        assert publisher.start().registered is True
    publisher.close(unregister=True)
    deprecations = [str(w.message) for w in recwarn if "deprecated" in str(w.message)]
    assert deprecations == []
    assert [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()] == []


def test_history_gets_message_author_and_labels_move(iii: III, observer: III, uid: str) -> None:
    publisher = Publisher(iii, backoff=FAST)
    sid = f"versioned-{uid}"
    publisher.skill(sid, "# V1\n", message="first cut", author="python-sdk")
    publisher.prompt(f"vp-{uid}", "Versioned prompt", echo, message="prompt v1")
    assert publisher.start().registered is True
    publisher.skill(sid, "# V2\n", message="second cut")
    wait_until(lambda: publisher.skill_versions(sid)["latest"] == 2)
    history = publisher.skill_versions(sid)
    assert [v["message"] for v in history["versions"]] == ["second cut", "first cut"]
    assert history["versions"][1]["author"] == "python-sdk"
    assert history["versions"][0]["labels"] == ["latest"]
    move = publisher.label_skill(sid, "production", 1)
    assert move == {"id": sid, "label": "production", "version": 1}
    assert read(observer, f"iii://{sid}@production")["text"] == "# V1\n"
    assert publisher.label_skill(sid, "production", "latest")["previous"] == 1
    with pytest.raises(Exception, match="moved by the registry only"):
        publisher.label_skill(sid, "latest", 1)
    # The registry's NOT_FOUND, told by its code: an unknown version or id.
    with pytest.raises(Exception) as unknown_version:
        publisher.label_skill(sid, "canary", 9)
    assert is_not_found(unknown_version.value)
    with pytest.raises(Exception) as unknown_id:
        publisher.skill_versions(f"never-published-{uid}")
    assert is_not_found(unknown_id.value)
    assert publisher.prompt_versions(f"vp-{uid}")["versions"][0]["message"] == "prompt v1"
    assert publisher.label_prompt(f"vp-{uid}", "stable", 1)["version"] == 1
    publisher.close(unregister=True)
