"""Publisher behaviour against a fake client (no engine needed)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from pydantic import BaseModel, Field

import iii_skills
from iii_skills import (
    Backoff,
    Holder,
    RegistrationResult,
    Rejection,
    ValidationError,
    PromptChange,
    PromptArgumentError,
    Publisher,
    SkillChange,
    is_not_found,
)
from iii_skills._fixtures import EchoRequest, EchoResponse, count_words, dialogue, echo, send_email

from .fakes import FakeClient, FakeInvocationError

GAVE_UP = "skills handshake gave up; install / start it and restart this worker"
FAST = Backoff(initial_delay=0.01, multiplier=2, max_delay=0.05, give_up_after=30)


class FakeClock:
    """Drives the registrar's clock from the recorded pauses, so no test waits for real."""

    def __init__(self, publisher: Publisher) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        publisher._registrar._clock = lambda: self.now
        publisher._registrar._pause = self.pause  # type: ignore[method-assign]

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def registry_absent(function_id: str, payload: Any) -> Any:
    raise FakeInvocationError("function_not_found", f"Function {function_id} not found")


# ----------------------------------------------------------------------------- content


def test_skill_is_validated_locally() -> None:
    publisher = Publisher(FakeClient())
    with pytest.raises(ValidationError, match="^id must be non-empty$"):
        publisher.skill("", "# x")
    with pytest.raises(ValidationError, match="reserved as the iii://fn/"):
        publisher.skill("fn/x", "# x")
    with pytest.raises(ValidationError, match="^skill must be non-empty$"):
        publisher.skill("x", "")


def test_section_decorator_registers_the_function_and_exposes_the_uri() -> None:
    client = FakeClient()
    publisher = Publisher(client)

    @publisher.section("resend/health", description="Live health")
    def health() -> dict[str, str]:
        return {"content": "# ok"}

    assert health.uri == "iii://fn/resend/health"
    assert health.function_id == "resend::health"
    assert health() == {"content": "# ok"}
    assert getattr(health, "__name__") == "health"  # functools.update_wrapper
    assert publisher.section_uri("resend/health") == "iii://fn/resend/health"
    fn = client.functions["resend::health"]
    assert fn.description == "Live health"
    assert client.invoke("resend::health", {"_caller_worker_id": "w"}) == {"content": "# ok"}


def test_section_handlers_may_be_async_and_return_models() -> None:
    client = FakeClient()
    publisher = Publisher(client)

    class Status(BaseModel):
        healthy: bool
        quota: int

    async def status() -> Status:
        await asyncio.sleep(0)
        return Status(healthy=True, quota=73)

    section = publisher.section("a/status", status)
    assert section.uri == "iii://fn/a/status"
    assert client.invoke("a::status", {}) == {"healthy": True, "quota": 73}


def test_section_path_is_validated() -> None:
    publisher = Publisher(FakeClient())
    with pytest.raises(ValidationError, match="internal namespace"):
        publisher.section("state/set", lambda: "x")
    with pytest.raises(ValidationError, match='invalid section URI segment "Bad"'):
        publisher.section("Bad")
    with pytest.raises(ValidationError, match="segment must be non-empty"):
        publisher.section_uri("a//b")


def test_duplicate_section_is_refused() -> None:
    publisher = Publisher(FakeClient())
    publisher.section("a/b", lambda: "x")
    with pytest.raises(ValueError, match="already registered"):
        publisher.section("a/b", lambda: "y")


def test_prompt_registers_handler_and_derived_arguments() -> None:
    client = FakeClient()
    publisher = Publisher(client)
    prompt = publisher.prompt("send-email", "Compose and send an email", send_email)

    assert prompt.function_id == "prompt::send-email"
    assert "prompt::send-email" in client.functions
    assert publisher.start()
    assert client.calls_to("prompts::register") == [
        {
            "name": "send-email",
            "description": "Compose and send an email",
            "function_id": "prompt::send-email",
            "arguments": [
                {"name": "to", "required": True, "description": "Recipient address"},
                {"name": "subject", "required": True, "description": "Subject line"},
                {"name": "urgent", "required": False, "description": "Mark as urgent"},
            ],
        }
    ]
    publisher.close()


def test_prompt_handler_validates_before_running() -> None:
    client = FakeClient()
    publisher = Publisher(client)
    ran: list[str] = []

    @publisher.prompt(name="send-email", description="Compose and send an email")
    def render(to: str, subject: str, urgent: bool = False) -> str:
        ran.append(to)
        return f"to {to} about {subject}{' urgently' if urgent else ''}"

    assert render("a", "b") == "to a about b"  # still callable directly
    ran.clear()
    with pytest.raises(PromptArgumentError) as caught:
        client.invoke("prompt::send-email", {"subject": 3})
    assert str(caught.value) == (
        'prompt "send-email": missing required argument "to"; '
        'argument "subject" must be a string, got 3'
    )
    assert ran == []
    assert (
        client.invoke(
            "prompt::send-email",
            {"to": "x@y.z", "subject": "hi", "urgent": "true", "_caller_worker_id": "w"},
        )
        == "to x@y.z about hi urgently"
    )


def test_prompt_fixtures_render() -> None:
    client = FakeClient()
    publisher = Publisher(client)
    publisher.prompt("send-email", "d", send_email)
    publisher.prompt("count-words", "d", count_words)
    publisher.prompt("dialogue", "d", dialogue, function_id="custom::dialogue")

    assert client.invoke("prompt::send-email", {"to": "a@b.c", "subject": "Hi", "urgent": True}) == {
        "content": 'Compose an email to a@b.c with the subject "Hi". Mark it urgent.'
    }
    assert client.invoke("prompt::count-words", {"limit": "12"}) == "Use at most 12 words."
    assert client.invoke("custom::dialogue", {})["messages"][1]["role"] == "assistant"


def test_async_prompt_and_unsupported_output() -> None:
    client = FakeClient()
    publisher = Publisher(client)

    class Args(BaseModel):
        topic: str = Field(description="Topic")

    @publisher.prompt("good", "d")
    async def good(args: Args) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": {"type": "text", "text": args.topic}}]}

    @publisher.prompt("bad", "d", args=Args)
    def bad(args: Args) -> Any:
        return 42

    assert client.invoke("prompt::good", {"topic": "x"})["messages"][0]["content"]["text"] == "x"
    with pytest.raises(TypeError, match=r"^prompt handler returned unsupported shape"):
        client.invoke("prompt::bad", {"topic": "x"})


def test_prompt_validation_errors() -> None:
    publisher = Publisher(FakeClient())
    with pytest.raises(ValidationError, match="^name may only contain"):
        publisher.prompt("Bad Name", "d")
    with pytest.raises(ValidationError, match="^description must be non-empty$"):
        publisher.prompt("ok", " ")
    with pytest.raises(ValidationError, match="Prompt handler 'skills::x' is in an internal"):
        publisher.prompt("ok", "d", function_id="skills::x")
    publisher.prompt("ok", "d", lambda: "x")
    with pytest.raises(ValueError, match="already added"):
        publisher.prompt("ok", "d", lambda: "y", function_id="other::ok")


def test_typed_function_formats_come_from_pydantic() -> None:
    client = FakeClient()
    publisher = Publisher(client)
    fn = publisher.function("example::echo", echo, description="Echo")

    request = client.functions["example::echo"].request_format
    response = client.functions["example::echo"].response_format
    assert request is not None and response is not None
    assert request["type"] == "object"
    assert set(request["properties"]) == {"message", "repeat"}
    assert sorted(request["required"]) == ["message", "repeat"]
    assert request["properties"]["repeat"]["type"] == "integer"
    assert response["type"] == "object"
    assert response["required"] == ["echo"]
    assert fn.request_format == request
    assert fn(EchoRequest(message="a", repeat=2)) == EchoResponse(echo="aa")
    assert client.invoke("example::echo", {"message": "ab", "repeat": 3, "_caller_worker_id": "w"}) == {
        "echo": "ababab"
    }
    with pytest.raises(ValueError, match="invalid request: repeat: "):
        client.invoke("example::echo", {"message": "ab", "repeat": "many"})


def test_typed_function_decorator_with_plain_types() -> None:
    client = FakeClient()
    publisher = Publisher(client)

    @publisher.function("math::double")
    async def double(value: int) -> int:
        return value * 2

    assert client.functions["math::double"].request_format == {"type": "integer"}
    assert client.functions["math::double"].response_format == {"type": "integer"}
    assert client.invoke("math::double", "21") == 42

    @publisher.function("math::now")
    def now() -> None:
        return None

    assert client.functions["math::now"].request_format is None
    assert client.functions["math::now"].response_format is None
    with pytest.raises(TypeError, match="at most one parameter"):
        publisher.function("math::two", lambda a, b: a)


# ----------------------------------------------------------------------------- subscriptions


def test_change_subscriptions_decode_typed_events() -> None:
    client = FakeClient()
    publisher = Publisher(client, internal_namespace="iii-skills::t")
    skills: list[SkillChange] = []
    prompts: list[PromptChange] = []

    @publisher.on_skill_change
    def on_skill(event: SkillChange) -> None:
        skills.append(event)

    @publisher.on_prompt_change
    async def on_prompt(event: PromptChange) -> None:
        prompts.append(event)

    (skill_trigger,) = client.triggers_of("skills::on-change")
    (prompt_trigger,) = client.triggers_of("prompts::on-change")
    assert skill_trigger.trigger["config"] == {}
    skill_fn = client.functions[skill_trigger.trigger["function_id"]]
    prompt_fn = client.functions[prompt_trigger.trigger["function_id"]]
    assert skill_fn.metadata == {"internal": True}
    assert prompt_fn.metadata == {"internal": True}

    client.invoke(skill_fn.function_id, {"op": "register", "id": "a/b", "_caller_worker_id": "w"})
    client.invoke(skill_fn.function_id, {"op": "rename", "id": "a"})  # malformed: dropped
    client.invoke(prompt_fn.function_id, {"op": "unregister", "name": "send-email"})
    assert skills == [SkillChange(op="register", id="a/b")]
    assert prompts == [PromptChange(op="unregister", name="send-email")]


# ----------------------------------------------------------------------------- registration


def test_start_registers_everything_in_order() -> None:
    client = FakeClient()
    publisher = Publisher(client)
    publisher.skill("resend", "# resend")
    publisher.prompt("dialogue", "d", dialogue)
    publisher.skill("resend/email", "# email")
    publisher.skill("resend", "# resend v2")  # replaces the body, keeps its place
    registered = threading.Event()
    publisher.on_registered(registered.set)

    assert publisher.start().registered is True
    assert registered.is_set()
    order = [(fid, p.get("id") or p.get("name")) for fid, p in client.calls]
    assert order == [
        ("skills::register", "resend"),
        ("prompts::register", "dialogue"),
        ("skills::register", "resend/email"),
    ]
    assert client.calls[0][1] == {"id": "resend", "skill": "# resend v2"}
    # the registry watch is bound once started
    (watch,) = client.triggers_of("engine::functions-available")
    assert client.functions[watch.trigger["function_id"]].metadata == {"internal": True}
    publisher.close()


def test_default_backoff_schedule_and_give_up(caplog: pytest.LogCaptureFixture) -> None:
    client = FakeClient(responder=registry_absent)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    publisher.skill("a", "# a")
    gave_up = threading.Event()
    publisher.on_gave_up(gave_up.set)

    with caplog.at_level(logging.INFO, logger="iii_skills"):
        assert publisher.start().registered is False

    assert clock.pauses == [5, 10, 20, 40, 60, 45]
    assert len(client.calls_to("skills::register")) == 7
    assert gave_up.is_set()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [GAVE_UP]
    publisher.close()


def test_custom_backoff_schedule() -> None:
    client = FakeClient(responder=registry_absent)
    publisher = Publisher(
        client, backoff=Backoff(initial_delay=1, multiplier=3, max_delay=10, give_up_after=30)
    )
    clock = FakeClock(publisher)
    publisher.skill("a", "# a")
    assert publisher.start().registered is False
    assert clock.pauses == [1, 3, 9, 10, 7]


def test_retries_only_what_is_missing() -> None:
    failures = {"b": 2}

    def flaky(function_id: str, payload: Any) -> Any:
        key = payload.get("id")
        if failures.get(key, 0) > 0:
            failures[key] -= 1
            raise FakeInvocationError("TIMEOUT", "invocation timed out after 5000ms")
        return {"id": key}

    client = FakeClient(responder=flaky)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    for key in "abc":
        publisher.skill(key, f"# {key}")
    assert publisher.start().registered is True
    ids = [p["id"] for p in client.calls_to("skills::register")]
    assert ids == ["a", "b", "b", "b", "c"]
    assert clock.pauses == [5, 10]
    publisher.close()


def test_a_refusal_blocks_nothing_and_start_reports_every_refusal_of_the_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def strict(function_id: str, payload: Any) -> Any:
        if payload.get("id") == "b":
            raise FakeInvocationError("invocation_failed", 'invalid id (segment 1 of "b"): nope')
        if payload.get("id") == "d":
            raise FakeInvocationError("INVALID_ARGUMENTS", "skill must be non-empty")
        return {}

    client = FakeClient(responder=strict)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    registered = threading.Event()
    publisher.on_registered(registered.set)
    for key in "abcd":
        publisher.skill(key, f"# {key}")
    with caplog.at_level(logging.ERROR, logger="iii_skills"):
        result = publisher.start()
    # Everything else of the round was registered before start() returned.
    assert [p["id"] for p in client.calls_to("skills::register")] == ["a", "b", "c", "d"]
    assert publisher._registrar.registered_items() == [("skill", "a"), ("skill", "c")]
    fix = "fix the skill and restart this worker (not retried)"
    assert result == RegistrationResult(
        registered=False,
        rejected=(
            Rejection("skill", "b", "invocation_failed", 'invalid id (segment 1 of "b"): nope', None, fix, False),
            Rejection("skill", "d", "INVALID_ARGUMENTS", "skill must be non-empty", None, fix, False),
        ),
    )
    assert not result
    publisher.close()  # waits for the registrar
    assert clock.pauses == []  # never retried
    assert not registered.is_set()  # a round with a refusal is not a full registration
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        f'skills registry refused skill "b" (invocation_failed): invalid id (segment 1 of "b"): nope; {fix}',
        f'skills registry refused skill "d" (INVALID_ARGUMENTS): skill must be non-empty; {fix}',
    ]


def test_a_held_id_blocks_nothing_and_giving_up_says_what_holds_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    held = (
        'skill "a/x" belongs to another worker (w1, named "other"); only the worker that '
        "registered it may register or unregister it while it is connected"
    )

    def holder(function_id: str, payload: Any) -> Any:
        if payload.get("id") == "a/x":
            raise FakeInvocationError("FORBIDDEN", held)
        return {}

    client = FakeClient(responder=holder)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    gave_up = threading.Event()
    publisher.on_gave_up(gave_up.set)
    for key in ("a/x", "b", "c"):
        publisher.skill(key, f"# {key}")
    with caplog.at_level(logging.DEBUG, logger="iii_skills"):
        result = publisher.start()
        assert gave_up.wait(10)
        publisher.close()
    (refusal,) = result.rejected
    assert refusal.holder == Holder("w1", "other") and refusal.retried and refusal.code == "FORBIDDEN"
    assert refusal.advice == (
        'stop worker "other" (w1), which holds it, or publish under another id; '
        "this worker retries until its registration deadline"
    )
    calls = [p["id"] for p in client.calls_to("skills::register")]
    assert calls[:3] == ["a/x", "b", "c"] and set(calls[3:]) == {"a/x"}, calls
    assert clock.pauses == [5, 10, 20, 40, 60, 45]  # retried until the deadline
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        str(refusal),  # once, not at every retry
        'skills registration gave up while other workers hold skill "a/x"; '
        "stop them or publish under other ids, then restart this worker",
    ]
    assert GAVE_UP not in warnings


def test_payload_decoding_errors_are_permanent() -> None:
    def strict(function_id: str, payload: Any) -> Any:
        raise FakeInvocationError("invocation_failed", "handler error: missing field `skill`")

    client = FakeClient(responder=strict)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    publisher.skill("a", "# a")
    assert publisher.start().registered is False
    publisher.close()
    assert clock.pauses == []
    assert len(client.calls_to("skills::register")) == 1


def test_invalid_arguments_code_is_permanent_whatever_the_text() -> None:
    def strict(function_id: str, payload: Any) -> Any:
        raise FakeInvocationError("INVALID_ARGUMENTS", "a refusal worded in a way no marker knows")

    client = FakeClient(responder=strict)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    publisher.skill("a", "# a")
    assert publisher.start().registered is False
    publisher.close()
    assert clock.pauses == []
    assert len(client.calls_to("skills::register")) == 1


def test_an_id_outside_the_token_namespaces_is_given_up_one_another_connection_holds_is_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outside = 'forbidden: skill "billing/x" is outside the namespaces of token "acme" (acme)'
    held = ["acme/x"]  # another connection holds acme/x for the first call

    def scoped(function_id: str, payload: Any) -> Any:
        if payload.get("id") == "billing/x":
            raise FakeInvocationError("OUT_OF_SCOPE", outside)
        if payload.get("id") in held:
            held.remove(payload["id"])
            raise FakeInvocationError("FORBIDDEN", 'skill "acme/x" belongs to another worker (w1)')
        return {}

    client = FakeClient(responder=scoped)
    publisher = Publisher(client)
    clock = FakeClock(publisher)
    publisher.skill("billing/x", "# billing")
    publisher.skill("acme/x", "# acme")
    with caplog.at_level(logging.ERROR, logger="iii_skills"):
        result = publisher.start()
        calls = client.wait_for_calls("skills::register", 3)
        publisher.close()  # waits for the registrar
    assert result.registered is False
    assert [(r.name, r.code, r.retried) for r in result.rejected] == [
        ("billing/x", "OUT_OF_SCOPE", False),
        ("acme/x", "FORBIDDEN", True),
    ]
    assert result.rejected[1].holder == Holder("w1")
    # OUT_OF_SCOPE is not retried; FORBIDDEN is, after one pause
    assert [p["id"] for p in calls] == ["billing/x", "acme/x", "acme/x"]
    assert len(clock.pauses) == 1
    assert sum(outside in r.getMessage() for r in caplog.records) == 1  # logged once


def test_no_call_outlives_the_deadline() -> None:
    timeouts: list[int] = []

    class Recording(FakeClient):
        def trigger(self, request: dict[str, Any]) -> Any:
            timeouts.append(request["timeout_ms"])
            return super().trigger(request)

    client = Recording(responder=registry_absent)
    publisher = Publisher(client, backoff=Backoff(initial_delay=5, give_up_after=7.5))
    clock = FakeClock(publisher)
    publisher.skill("a", "# a")
    assert publisher.start().registered is False
    publisher.close()
    assert clock.pauses == [5, 2.5]
    assert timeouts == [5000, 2500, 1]


def test_reregisters_after_the_connection_comes_back() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST)
    publisher.skill("a", "# a")
    publisher.prompt("dialogue", "d", dialogue)
    rounds = threading.Semaphore(0)
    publisher.on_registered(rounds.release)
    assert publisher.start()
    assert rounds.acquire(timeout=5)

    client.set_state("disconnected")
    client.set_state("reconnecting")
    client.set_state("connected")
    assert rounds.acquire(timeout=10)
    assert len(client.calls_to("skills::register")) == 2
    assert len(client.calls_to("prompts::register")) == 2
    publisher.close()


def test_initial_connecting_state_does_not_count_as_reconnect() -> None:
    client = FakeClient(state="connected")
    publisher = Publisher(client, backoff=FAST)
    publisher.skill("a", "# a")
    assert publisher.start()
    client.set_state("connected")  # no transition
    publisher.close()
    assert len(client.calls_to("skills::register")) == 1


def test_reregisters_when_the_registry_reappears() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST, internal_namespace="iii-skills::w")
    publisher.skill("a", "# a")
    rounds = threading.Semaphore(0)
    publisher.on_registered(rounds.release)
    assert publisher.start()
    assert rounds.acquire(timeout=5)
    watch = client.functions["iii-skills::w::functions-available"]

    present = {"event": "functions_changed", "functions": [{"function_id": "skills::register"}]}
    absent = {"event": "functions_changed", "functions": [{"function_id": "other::x"}]}
    client.invoke(watch.function_id, present)  # still there: nothing to do
    client.invoke(watch.function_id, {"event": "functions_changed"})  # no list: ignored
    client.invoke(watch.function_id, absent)
    assert len(client.calls_to("skills::register")) == 1
    client.invoke(watch.function_id, present)
    assert rounds.acquire(timeout=10)
    assert len(client.calls_to("skills::register")) == 2
    publisher.close()


def test_registry_arriving_during_backoff_cuts_the_wait_short() -> None:
    available = threading.Event()

    def responder(function_id: str, payload: Any) -> Any:
        if not available.is_set():
            raise FakeInvocationError("function_not_found", "Function skills::register not found")
        return {}

    client = FakeClient(responder=responder)
    # a long first delay: only the functions-available event can end it in time
    publisher = Publisher(client, backoff=Backoff(initial_delay=600, give_up_after=1200), internal_namespace="iii-skills::w")
    publisher.skill("a", "# a")
    result: list[bool] = []
    starter = threading.Thread(target=lambda: result.append(publisher.start().registered))
    starter.start()
    client.wait_for_calls("skills::register", 1)
    available.set()
    client.invoke(
        "iii-skills::w::functions-available",
        {"functions": [{"function_id": "skills::register"}]},
    )
    starter.join(timeout=10)
    assert result == [True]
    publisher.close()


def test_items_added_after_start_are_registered() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST)
    assert publisher.start()
    publisher.skill("late", "# late")
    client.wait_for_calls("skills::register", 1)
    publisher.close()


def test_close_stops_retrying_and_unregisters() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST)
    publisher.skill("a", "# a")
    publisher.skill("b", "# b")
    publisher.prompt("dialogue", "d", dialogue)
    section = publisher.section("x/y", lambda: "x")
    publisher.on_skill_change(lambda e: None)
    assert publisher.start()

    publisher.close(unregister=True)
    assert client.calls_to("skills::unregister") == [{"id": "a"}, {"id": "b"}]
    assert client.calls_to("prompts::unregister") == [{"name": "dialogue"}]
    assert all(fn.unregistered for fn in client.functions.values())
    assert all(t.unregistered for t in client.triggers)
    assert client.listeners == []
    assert section.uri == "iii://fn/x/y"
    publisher.close(unregister=True)  # idempotent
    assert len(client.calls_to("skills::unregister")) == 2
    with pytest.raises(RuntimeError, match="closed"):
        publisher.skill("c", "# c")


def test_close_without_unregister_leaves_the_registry_alone() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST)
    publisher.skill("a", "# a")
    assert publisher.start()
    publisher.close()
    assert client.calls_to("skills::unregister") == []


def test_close_interrupts_a_waiting_start() -> None:
    client = FakeClient(responder=registry_absent)
    publisher = Publisher(client, backoff=Backoff(initial_delay=600, give_up_after=1200))
    publisher.skill("a", "# a")
    result: list[bool] = []
    starter = threading.Thread(target=lambda: result.append(publisher.start().registered))
    starter.start()
    client.wait_for_calls("skills::register", 1)
    publisher.close(unregister=True)
    starter.join(timeout=10)
    assert result == [False]
    assert client.calls_to("skills::unregister") == []  # never registered


def test_backoff_can_only_change_before_start() -> None:
    publisher = Publisher(FakeClient())
    publisher.backoff = FAST
    assert publisher.backoff == FAST
    assert publisher.start()
    with pytest.raises(RuntimeError, match="before start"):
        publisher.backoff = Backoff()
    publisher.close()


def test_backoff_delays_and_checks() -> None:
    delays = Backoff().delays()
    assert [next(delays) for _ in range(7)] == [5, 10, 20, 40, 60, 60, 60]
    with pytest.raises(ValueError):
        Backoff(multiplier=0.5)
    with pytest.raises(ValueError):
        Backoff(initial_delay=-1)


def test_start_async_and_close_async() -> None:
    client = FakeClient()
    publisher = Publisher(client, backoff=FAST)
    publisher.skill("a", "# a")

    async def main() -> bool:
        ok = await publisher.start_async()
        await publisher.close_async(unregister=True)
        return ok.registered

    assert asyncio.run(main()) is True
    assert client.calls_to("skills::unregister") == [{"id": "a"}]


def test_blocking_calls_are_refused_inside_an_event_loop() -> None:
    publisher = Publisher(FakeClient(), backoff=FAST)

    async def main() -> None:
        with pytest.raises(RuntimeError, match="use await publisher.start_async"):
            publisher.start()
        with pytest.raises(RuntimeError, match="use await publisher.close_async"):
            publisher.close()
        assert (await publisher.start_async()).registered is True
        await publisher.close_async()

    asyncio.run(main())


def test_events_decode() -> None:
    assert SkillChange.from_payload({"op": "register", "id": "x", "extra": 1}) == SkillChange(
        "register", "x"
    )
    assert SkillChange.from_payload({"op": "register"}) is None
    assert SkillChange.from_payload([]) is None
    assert PromptChange.from_payload({"op": "unregister", "name": "p"}) == PromptChange(
        "unregister", "p"
    )
    assert PromptChange.from_payload({"op": "x", "name": "p"}) is None


def test_driver_command_decoding() -> None:
    from iii_skills._driver import CommandError, decode_command

    assert decode_command('{"id": 4, "cmd": "skill", "skill_id": "a", "markdown": "# x"}') == (
        4,
        {"cmd": "skill", "skill_id": "a", "markdown": "# x"},
    )
    # A second "id" is no argument: plain JSON decoding keeps the last one.
    assert decode_command('{"id": 3, "cmd": "skill", "id": "a/b", "markdown": "# x"}') == (
        "a/b",
        {"cmd": "skill", "markdown": "# x"},
    )
    assert decode_command('{"cmd": "hello"}') == (None, {"cmd": "hello"})
    frame_id, arguments = decode_command('{"id": 5, "cmd": "section", "output": {"a": {"b": 1}}}')
    assert frame_id == 5 and arguments["output"] == {"a": {"b": 1}}
    for bad in ("[1]", "nope", "", "null"):
        with pytest.raises(CommandError, match="^bad command line"):
            decode_command(bad)


def test_is_not_found_decides_by_code_then_upstream_text() -> None:
    assert is_not_found(FakeInvocationError("NOT_FOUND", "skill a has no version 9 (kept: 1-2)"))
    assert is_not_found(FakeInvocationError("invocation_failed", "Skill not found: a/b"))
    assert is_not_found(FakeInvocationError("invocation_failed", "handler error: Prompt not found: p"))
    assert not is_not_found(FakeInvocationError("INVALID_ARGUMENTS", "Skill not found: a/b"))
    assert not is_not_found(FakeInvocationError("function_not_found", "Function skills::versions not found"))
    assert not is_not_found(FakeInvocationError("invocation_failed", "state::get: invocation timed out"))


def test_moved_classes_keep_their_import_paths() -> None:
    # Backoff moved into _registrar.py and the change events into publisher.py
    # (where Go and Node keep them); iii_skills.backoff / .events still import.
    from iii_skills import backoff, events

    assert backoff.Backoff is iii_skills.Backoff
    assert (events.ChangeOp, events.PromptChange, events.SkillChange) == (
        iii_skills.ChangeOp,
        iii_skills.PromptChange,
        iii_skills.SkillChange,
    )


def test_the_deprecated_name_keyword_still_sets_the_internal_namespace() -> None:
    client = FakeClient()
    with pytest.warns(DeprecationWarning, match='internal_namespace="iii-skills::w"'):
        publisher = Publisher(client, name="w")
    publisher.on_skill_change(lambda e: None)
    assert [f for f in client.functions if f.startswith("iii-skills::w::")], list(client.functions)
    publisher.close()
