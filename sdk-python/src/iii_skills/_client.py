"""The part of the official ``iii-sdk`` client (``iii.register_worker(...)``) a publisher uses.

A structural type, so the publisher works with the official client without
importing it and tests can hand in a small fake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Client", "Registration"]


class Registration(Protocol):
    """What ``register_function`` / ``register_trigger`` return."""

    def unregister(self) -> None: ...


class Client(Protocol):
    """The official client's surface: functions, triggers, calls, connection state."""

    def register_function(
        self,
        function_id: str,
        handler_or_invocation: Any,
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        request_format: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Any: ...

    def register_trigger(self, trigger: dict[str, Any]) -> Any: ...

    def trigger(self, request: dict[str, Any]) -> Any: ...

    def add_connection_state_listener(
        self, handler: Callable[[str], None]
    ) -> Callable[[], None]: ...
