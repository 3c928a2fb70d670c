"""The registrar: registers a publisher's skills and prompts with the registry.

One thread runs registration efforts (rounds with capped exponential backoff
until everything is registered, refused or the deadline passed) and starts a
new one when the engine connection comes back or ``skills::register``
reappears. Go and Node keep the same job, and the :class:`Backoff` settings,
in ``registrar.go`` / ``registrar.ts``.
:class:`_Registrar` is a base of :class:`~iii_skills.publisher.Publisher`, which
owns the state declared below and sets it in its ``__init__``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from . import _messages as m
from ._client import Client


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff between registration rounds, in seconds.

    The defaults are the contract's: wait 5 s after the first failed round,
    double each time, never more than 60 s, give up 180 s after the first
    attempt (logging ``skills handshake gave up; install / start it and
    restart this worker`` at warning level).
    """

    initial_delay: float = 5.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    give_up_after: float = 180.0

    def __post_init__(self) -> None:
        if self.initial_delay < 0 or self.max_delay < 0 or self.give_up_after < 0:
            raise ValueError("backoff delays must not be negative")
        if self.multiplier < 1:
            raise ValueError("backoff multiplier must be at least 1")

    def delays(self) -> "_DelayIterator":
        """The successive waits: initial, ×multiplier, capped at max_delay."""
        return _DelayIterator(self)


class _DelayIterator:
    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._next = min(backoff.initial_delay, backoff.max_delay)

    def __iter__(self) -> "_DelayIterator":
        return self

    def __next__(self) -> float:
        current = self._next
        self._next = min(current * self._backoff.multiplier, self._backoff.max_delay)
        return current


_Key = tuple[Literal["skill", "prompt"], str]
_Status = Literal["registered", "gave_up", "rejected", "closed"]

# Codes that say the registry's function is not there (yet).
_NOT_FOUND_CODES = frozenset({"function_not_found"})


def _error_code(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else None


def _error_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    return text or type(exc).__name__


def is_not_found(exc: BaseException) -> bool:
    """Whether ``exc`` is the registry's answer that it does not hold what was asked.

    An unknown skill, prompt, version or label (``label_skill``,
    ``skill_versions``, ...). Our registry says so with code ``NOT_FOUND``;
    the message text is the fallback for an upstream registry, which answers
    every failure with ``invocation_failed``.
    """
    code = _error_code(exc)
    if code == m.CODE_NOT_FOUND:
        return True
    if code not in (None, "invocation_failed"):
        return False
    text = _error_text(exc)
    return any(p in text for p in m.NOT_FOUND_PREFIXES)


def _is_permanent(exc: BaseException) -> bool:
    """Whether the registry will refuse the same call again.

    Bad input (``INVALID_ARGUMENTS``, or a validation message from a registry
    that sends no code) or an id outside the namespaces of the publisher's
    scoped token (``OUT_OF_SCOPE``). ``FORBIDDEN`` (another connection holds
    the id) is not: it clears up when that connection goes.
    """
    if _error_code(exc) in (m.CODE_INVALID_ARGUMENTS, m.CODE_OUT_OF_SCOPE):
        return True
    text = _error_text(exc)
    return any(marker in text for marker in m.PERMANENT_MARKERS)


def _function_ids(payload: Any) -> set[str] | None:
    """Function ids of an ``engine::functions-available`` event (None if it has no list)."""
    if not isinstance(payload, Mapping):
        return None
    functions = payload.get("functions")
    if not isinstance(functions, list):
        return None
    ids: set[str] = set()
    for entry in functions:
        if isinstance(entry, str):
            ids.add(entry)
        elif isinstance(entry, Mapping):
            for key in ("function_id", "id", "name"):
                value = entry.get(key)
                if isinstance(value, str):
                    ids.add(value)
                    break
    return ids


class _Registrar:
    """Registration of skills and prompts with the registry (see the module docstring)."""

    # Set by Publisher.__init__, guarded by _cond.
    _iii: Client
    _backoff: Backoff
    _call_timeout_ms: int
    _log: logging.Logger
    _internal_prefix: str
    _cond: threading.Condition
    _items: dict[_Key, dict[str, Any]]
    _pending: set[_Key]
    _registered: list[_Key]
    _started: bool
    _closed: bool
    _thread: threading.Thread | None
    _requested: int
    _served: int
    _restart: bool
    _last_status: _Status
    _rejected: bool
    _rejections: int
    _registry_present: bool | None
    _last_state: str | None
    _unsubscribe_state: Callable[[], None] | None
    _registered_callbacks: list[Callable[[], None]]
    _gave_up_callbacks: list[Callable[[], None]]
    _clock: Callable[[], float]

    if TYPE_CHECKING:
        # Publisher's, used to watch for the registry.
        def _register_function(
            self,
            function_id: str,
            handler: Callable[[Any], Awaitable[Any]],
            *,
            description: str | None = None,
            metadata: dict[str, Any] | None = None,
            request_format: dict[str, Any] | None = None,
            response_format: dict[str, Any] | None = None,
        ) -> None: ...

        def _register_trigger(self, trigger_type: str, function_id: str) -> None: ...

    def _add_item(self, key: _Key, payload: dict[str, Any]) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the publisher is closed")
            self._items[key] = payload
            self._pending.add(key)
            if self._started:
                self._requested += 1
                self._cond.notify_all()

    def _request_locked(self, reason: str) -> int:
        """Ask for a fresh registration effort of everything (caller holds the lock)."""
        self._requested += 1
        self._restart = True
        self._pending = set(self._items)
        self._log.info("registering skills and prompts again: %s", reason)
        self._cond.notify_all()
        return self._requested

    def _begin(self) -> int:
        with self._cond:
            if self._closed:
                raise RuntimeError("the publisher is closed")
            first = not self._started
            self._started = True
            if not first:
                return self._request_locked("start() called again")
            self._pending = set(self._items)
            self._requested += 1
            ticket = self._requested
        # Watch before the first round starts: a registry that appears while
        # that round fails must end its backoff wait. Outside the lock, like
        # the listener below (it fires at once on this thread).
        self._watch_registry()
        with self._cond:
            self._thread = threading.Thread(
                target=self._run, name=f"{self._internal_prefix}-registrar", daemon=True
            )
            self._thread.start()
        unsubscribe = self._iii.add_connection_state_listener(self._on_connection_state)
        with self._cond:
            if self._closed:
                unsubscribe()
            else:
                self._unsubscribe_state = unsubscribe
        return ticket

    def _watch_registry(self) -> None:
        function_id = f"{self._internal_prefix}::functions-available"

        async def on_functions(data: Any) -> None:
            self._on_functions_available(data)

        self._register_function(function_id, on_functions, metadata={"internal": True})
        self._register_trigger(m.TRIGGER_FUNCTIONS_AVAILABLE, function_id)

    def _on_connection_state(self, state: str) -> None:
        """Connection-state listener of the official client (runs on its loop thread)."""
        with self._cond:
            previous, self._last_state = self._last_state, state
            if (
                state == "connected"
                and previous is not None
                and previous != "connected"
                and self._started
                and not self._closed
            ):
                self._request_locked("the engine connection was re-established")

    def _on_functions_available(self, data: Any) -> None:
        ids = _function_ids(data)
        if ids is None:
            return
        present = m.FN_SKILLS_REGISTER in ids
        with self._cond:
            was = self._registry_present
            self._registry_present = present
            # `was is None`: the event may arrive while the failed call that
            # would have set False is still being handled; restarting then
            # is harmless, missing it would sleep a whole backoff delay.
            if present and was is not True and self._started and not self._closed:
                self._request_locked(f"{m.FN_SKILLS_REGISTER} is available again")

    def _call(self, function_id: str, payload: dict[str, Any], timeout_ms: int | None = None) -> Any:
        return self._iii.trigger(
            {
                "function_id": function_id,
                "payload": payload,
                "timeout_ms": timeout_ms if timeout_ms is not None else self._call_timeout_ms,
            }
        )

    def _call_quietly(self, function_id: str, payload: dict[str, Any]) -> None:
        try:
            self._call(function_id, payload)
        except Exception as exc:
            self._log.warning("%s %s failed: %s", function_id, payload, _error_text(exc))

    def _run(self) -> None:
        """The registrar thread: one registration effort per request, in order."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._requested > self._served)
                if self._closed:
                    return
            status, covered = self._effort()
            callbacks: list[Callable[[], None]] = []
            with self._cond:
                self._served = max(self._served, covered)
                self._last_status = status
                if status == "registered":
                    callbacks = list(self._registered_callbacks)
                elif status == "gave_up":
                    callbacks = list(self._gave_up_callbacks)
                self._cond.notify_all()
            for callback in callbacks:
                try:
                    callback()
                except Exception:
                    self._log.exception("a registration callback failed")
            if status == "closed":
                return

    def _effort(self) -> tuple[_Status, int]:
        """Rounds with backoff until everything is registered, refused or the deadline passed."""
        with self._cond:
            started_at = self._clock()
            delays = self._backoff.delays()
            self._rejected = False
        while True:
            with self._cond:
                if self._closed:
                    return "closed", self._requested
                if self._restart:
                    self._restart = False
                    self._rejected = False
                    started_at = self._clock()
                    delays = self._backoff.delays()
                covered = self._requested
                keys = [key for key in self._items if key in self._pending]
                deadline = started_at + self._backoff.give_up_after
            failure = self._round(keys, deadline)
            with self._cond:
                if self._closed:
                    return "closed", self._requested
                if self._restart:
                    continue
                if failure is None:
                    if self._pending:
                        continue
                    if self._rejected:
                        return "rejected", covered
                    skills = sum(1 for kind, _ in self._items if kind == "skill")
                    self._log.info(
                        "registered %d skill(s) and %d prompt(s) with the skills registry",
                        skills,
                        len(self._items) - skills,
                    )
                    return "registered", covered
                elapsed = self._clock() - started_at
                give_up = self._backoff.give_up_after
                if elapsed >= give_up:
                    self._log.warning(m.GAVE_UP)
                    return "gave_up", covered
                wait = max(0.0, min(next(delays), give_up - elapsed))
                self._log.info(
                    "skills registration incomplete (%s); retrying in %.3g s", failure, wait
                )
                self._pause(wait)

    def _pause(self, seconds: float) -> None:
        """Wait between rounds (caller holds the lock); close() and restarts cut it short."""
        self._cond.wait_for(lambda: self._closed or self._restart, timeout=seconds)

    def _round(self, keys: Iterable[_Key], deadline: float) -> str | None:
        """Register ``keys`` in order; stop at the first transient failure and describe it.

        No call outlives the effort's deadline: each one's timeout is the
        configured one or the time left, whichever is shorter.
        """
        for key in keys:
            with self._cond:
                if self._closed or self._restart:
                    return None
                payload = self._items.get(key)
                if payload is None or key not in self._pending:
                    continue
            kind, name = key
            function_id = m.FN_SKILLS_REGISTER if kind == "skill" else m.FN_PROMPTS_REGISTER
            left_ms = int((deadline - self._clock()) * 1000)
            try:
                self._call(function_id, payload, max(1, min(self._call_timeout_ms, left_ms)))
            except Exception as exc:
                text = _error_text(exc)
                if _is_permanent(exc):
                    self._log.error("the registry refused %s %r: %s", kind, name, text)
                    with self._cond:
                        self._pending.discard(key)
                        self._rejected = True
                        self._rejections += 1
                        self._cond.notify_all()
                    continue
                with self._cond:
                    if _error_code(exc) in _NOT_FOUND_CODES:
                        self._registry_present = False
                code = _error_code(exc)
                return f"{function_id} {kind} {name!r}: {code + ': ' if code else ''}{text}"
            with self._cond:
                self._registry_present = True
                if self._items.get(key) is payload:
                    self._pending.discard(key)
                if key not in self._registered:
                    self._registered.append(key)
        return None
