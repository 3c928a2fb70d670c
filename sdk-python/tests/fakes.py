"""A small stand-in for the official client, for tests that need no engine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class FakeInvocationError(Exception):
    """Shaped like ``iii.InvocationError``: ``code`` and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class FakeFunction:
    function_id: str
    handler: Callable[[Any], Any]
    description: str | None
    metadata: dict[str, Any] | None
    request_format: dict[str, Any] | None
    response_format: dict[str, Any] | None
    unregistered: bool = False

    def unregister(self) -> None:
        self.unregistered = True


@dataclass
class FakeTrigger:
    trigger: dict[str, Any]
    unregistered: bool = False

    def unregister(self) -> None:
        self.unregistered = True


Responder = Callable[[str, Any], Any]


def accept_all(function_id: str, payload: Any) -> Any:
    return {"ok": True}


@dataclass
class FakeClient:
    """Records registrations and calls; ``responder`` answers ``trigger``."""

    responder: Responder = accept_all
    state: str = "connected"
    functions: dict[str, FakeFunction] = field(default_factory=dict)
    triggers: list[FakeTrigger] = field(default_factory=list)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def register_function(
        self,
        function_id: str,
        handler_or_invocation: Any,
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        request_format: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> FakeFunction:
        if function_id in self.functions and not self.functions[function_id].unregistered:
            raise ValueError(f"function id '{function_id}' already registered")
        fn = FakeFunction(
            function_id,
            handler_or_invocation,
            description,
            metadata,
            request_format,
            response_format,
        )
        self.functions[function_id] = fn
        return fn

    def register_trigger(self, trigger: dict[str, Any]) -> FakeTrigger:
        ref = FakeTrigger(dict(trigger))
        self.triggers.append(ref)
        return ref

    def trigger(self, request: dict[str, Any]) -> Any:
        function_id = request["function_id"]
        payload = request.get("payload")
        with self._cond:
            self.calls.append((function_id, payload))
            self._cond.notify_all()
        return self.responder(function_id, payload)

    def add_connection_state_listener(self, handler: Callable[[str], None]) -> Callable[[], None]:
        self.listeners.append(handler)
        handler(self.state)

        def unsubscribe() -> None:
            if handler in self.listeners:
                self.listeners.remove(handler)

        return unsubscribe

    # -- helpers for tests

    def set_state(self, state: str) -> None:
        self.state = state
        for listener in list(self.listeners):
            listener(state)

    def invoke(self, function_id: str, data: Any) -> Any:
        """Run a registered handler the way the engine would, with ``data``."""
        return asyncio.run(self.functions[function_id].handler(data))

    def calls_to(self, function_id: str) -> list[Any]:
        with self._cond:
            return [payload for fid, payload in self.calls if fid == function_id]

    def wait_for_calls(self, function_id: str, count: int, timeout: float = 10.0) -> list[Any]:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: sum(1 for fid, _ in self.calls if fid == function_id) >= count, timeout
            )
        assert ok, f"expected {count} call(s) to {function_id}, got {self.calls_to(function_id)}"
        return self.calls_to(function_id)

    def triggers_of(self, trigger_type: str) -> list[FakeTrigger]:
        return [t for t in self.triggers if t.trigger["type"] == trigger_type]
