"""The registrar: registers a publisher's skills and prompts with the registry.

One thread runs registration efforts (rounds with capped exponential backoff
until everything is registered, refused or the deadline passed) and starts a
new one when the engine connection comes back or ``skills::register``
reappears. Go and Node keep the same job, and the :class:`Backoff` settings,
in ``registrar.go`` / ``registrar.ts``. Like theirs, a
:class:`~iii_skills.publisher.Publisher` holds one :class:`_Registrar` and
hands it what it needs (the client, a way to watch for the registry, its
settings and logger); the registrar owns its own state.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from . import _messages as m
from ._client import Client
from ._refusal import Rejection, error_code, error_text, gave_up_held_message, refusal_of


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


@dataclasses.dataclass(frozen=True)
class RegistrationResult:
    """What :meth:`~iii_skills.publisher.Publisher.start` reports.

    ``registered`` is True when the registry accepted every skill and
    prompt; the result is true exactly then, so ``if publisher.start():``
    reads as before. ``rejected`` holds every refusal of the first round
    that met one (everything else of that round was registered), each with
    its code, the holder of an id another worker holds, and advice; it is
    empty when registration completed, or gave up with the registry absent.
    """

    registered: bool
    rejected: tuple[Rejection, ...] = ()

    def __bool__(self) -> bool:
        return self.registered


def is_not_found(exc: BaseException) -> bool:
    """Whether ``exc`` is the registry's answer that it does not hold what was asked.

    An unknown skill, prompt, version or label (``label_skill``,
    ``skill_versions``, ...). Our registry says so with code ``NOT_FOUND``;
    the message text is the fallback for an upstream registry, which answers
    every failure with ``invocation_failed``.
    """
    code = error_code(exc)
    if code == m.CODE_NOT_FOUND:
        return True
    if code not in ("", "invocation_failed"):
        return False
    text = error_text(exc)
    return any(p in text for p in m.NOT_FOUND_PREFIXES)


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
    """Registration of a publisher's skills and prompts with the registry (see the module docstring).

    Args:
        iii: the client: registry calls go through its ``trigger``, and its
            connection-state listener says when the engine connection is back.
        backoff: the retry schedule (replaceable until :meth:`begin`).
        call_timeout_ms: timeout of each registry call.
        log: where it logs.
        thread_name: name of its thread.
        watch: binds a handler of ``engine::functions-available`` events
            (the publisher registers the function and the trigger, so it
            unregisters them on close).
    """

    def __init__(
        self,
        iii: Client,
        *,
        backoff: Backoff,
        call_timeout_ms: int,
        log: logging.Logger,
        thread_name: str,
        watch: Callable[[Callable[[Any], None]], None],
    ) -> None:
        self._iii = iii
        self._backoff = backoff
        self._call_timeout_ms = call_timeout_ms
        self._log = log
        self._thread_name = thread_name
        self._watch = watch

        self._cond = threading.Condition(threading.RLock())
        self._items: dict[_Key, dict[str, Any]] = {}
        self._pending: set[_Key] = set()
        self._registered: list[_Key] = []
        self._started = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._requested = 0
        self._served = 0
        self._restart = False
        self._last_status: _Status = "closed"
        # Rounds that met refusals, and the refusals of the latest one: each
        # such round settles a waiting start().
        self._refusal_rounds = 0
        self._last_refused: tuple[Rejection, ...] = ()
        self._registry_present: bool | None = None
        self._last_state: str | None = None
        self._unsubscribe_state: Callable[[], None] | None = None

        self._registered_callbacks: list[Callable[[], None]] = []
        self._gave_up_callbacks: list[Callable[[], None]] = []

        # Seam for tests (with _pause): the registrar's clock.
        self._clock: Callable[[], float] = time.monotonic

    # ------------------------------------------------------------------ settings

    @property
    def backoff(self) -> Backoff:
        return self._backoff

    @backoff.setter
    def backoff(self, value: Backoff) -> None:
        with self._cond:
            if self._started:
                raise RuntimeError("the backoff can only be changed before start()")
            self._backoff = value

    def on_registered(self, callback: Callable[[], None]) -> None:
        with self._cond:
            self._registered_callbacks.append(callback)

    def on_gave_up(self, callback: Callable[[], None]) -> None:
        with self._cond:
            self._gave_up_callbacks.append(callback)

    # ------------------------------------------------------------------ items

    def add(self, key: _Key, payload: dict[str, Any]) -> None:
        """Add or replace an item; once started, it is registered right away."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the publisher is closed")
            self._items[key] = payload
            self._pending.add(key)
            if self._started:
                self._requested += 1
                self._cond.notify_all()

    def registered_items(self) -> list[_Key]:
        """The items the registry accepted at least once, in that order."""
        with self._cond:
            return list(self._registered)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RegistrationResult:
        """Begin (or request again) and wait for the outcome (see Publisher.start)."""
        with self._cond:
            refusals = self._refusal_rounds
        ticket = self.begin()
        with self._cond:
            self._cond.wait_for(
                lambda: self._served >= ticket or self._closed or self._refusal_rounds > refusals
            )
            if self._refusal_rounds > refusals:
                return RegistrationResult(registered=False, rejected=self._last_refused)
            return RegistrationResult(
                registered=self._served >= ticket and self._last_status == "registered"
            )

    def begin(self) -> int:
        """Start registering (or, when started, register everything again); returns a ticket."""
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
        self._watch(self._on_functions_available)
        with self._cond:
            self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
            self._thread.start()
        unsubscribe = self._iii.add_connection_state_listener(self._on_connection_state)
        with self._cond:
            if self._closed:
                unsubscribe()
            else:
                self._unsubscribe_state = unsubscribe
        return ticket

    def close(self) -> None:
        """Stop retrying and wait for the registrar thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
            unsubscribe = self._unsubscribe_state
            self._unsubscribe_state = None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if unsubscribe is not None:
            unsubscribe()

    def _request_locked(self, reason: str) -> int:
        """Ask for a fresh registration effort of everything (caller holds the lock)."""
        self._requested += 1
        self._restart = True
        self._pending = set(self._items)
        self._log.info("registering skills and prompts again: %s", reason)
        self._cond.notify_all()
        return self._requested

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

    def _call(self, function_id: str, payload: dict[str, Any], timeout_ms: int) -> Any:
        return self._iii.trigger(
            {"function_id": function_id, "payload": payload, "timeout_ms": timeout_ms}
        )

    # ------------------------------------------------------------------ the thread

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
        """Rounds with backoff until everything is registered or refused, or the deadline passed.

        The first round that meets refusals settles a waiting start() with
        all of them; items another worker holds stay pending and are retried.
        """
        with self._cond:
            started_at = self._clock()
            delays = self._backoff.delays()
        held: dict[_Key, Rejection] = {}  # pending items another worker holds
        rejected = False  # a permanent refusal in this effort
        while True:
            with self._cond:
                if self._closed:
                    return "closed", self._requested
                if self._restart:
                    self._restart = False
                    rejected = False
                    held.clear()
                    started_at = self._clock()
                    delays = self._backoff.delays()
                covered = self._requested
                keys = [key for key in self._items if key in self._pending]
                deadline = started_at + self._backoff.give_up_after
            refused: list[Rejection] = []
            failure = self._round(keys, deadline, held, refused)
            with self._cond:
                if refused:
                    rejected = rejected or any(not r.retried for r in refused)
                    self._refusal_rounds += 1
                    self._last_refused = tuple(refused)
                    self._cond.notify_all()
                if self._closed:
                    return "closed", self._requested
                if self._restart:
                    continue
                if failure is None:
                    if any(key not in held for key in self._pending):
                        continue
                    if not held:
                        if rejected:
                            return "rejected", covered
                        skills = sum(1 for kind, _ in self._items if kind == "skill")
                        prompts = len(self._items) - skills
                        self._log.info(
                            "registered with the skills registry: %d skill%s, %d prompt%s",
                            skills,
                            "" if skills == 1 else "s",
                            prompts,
                            "" if prompts == 1 else "s",
                        )
                        return "registered", covered
                    failure = "other workers hold " + ", ".join(f"{r.kind} {r.name!r}" for r in held.values())
                elapsed = self._clock() - started_at
                give_up = self._backoff.give_up_after
                if elapsed >= give_up:
                    # When every missing item is held by another worker the
                    # registry runs: say so instead of "install / start it".
                    still_held = self._held_pending(held)
                    self._log.warning(
                        "%s", m.GAVE_UP if still_held is None else gave_up_held_message(still_held)
                    )
                    return "gave_up", covered
                wait = max(0.0, min(next(delays), give_up - elapsed))
                self._log.info(
                    "skills registration incomplete (%s); retrying in %.3g s", failure, wait
                )
                self._pause(wait)

    def _held_pending(self, held: dict[_Key, Rejection]) -> list[Rejection] | None:
        """The refusals of the pending items when another worker holds every one (caller holds the lock)."""
        out: list[Rejection] = []
        for key in self._items:
            if key not in self._pending:
                continue
            refusal = held.get(key)
            if refusal is None:
                return None
            out.append(refusal)
        return out

    def _pause(self, seconds: float) -> None:
        """Wait between rounds (caller holds the lock); close() and restarts cut it short."""
        self._cond.wait_for(lambda: self._closed or self._restart, timeout=seconds)

    def _round(
        self,
        keys: Iterable[_Key],
        deadline: float,
        held: dict[_Key, Rejection],
        refused: list[Rejection],
    ) -> str | None:
        """Register ``keys`` in order and describe a failure that ended the round early.

        A refusal of one item (permanent, or another worker holds it) is
        recorded in ``refused`` and the round goes on, so one id never
        blocks the others; a failure that is not about the item (the
        registry is absent or does not answer) ends the round. No call
        outlives the effort's deadline: each one's timeout is the configured
        one or the time left, whichever is shorter.
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
                refusal = refusal_of(kind, name, exc)
                if refusal is None:
                    code = error_code(exc)
                    with self._cond:
                        if code in _NOT_FOUND_CODES:
                            self._registry_present = False
                    return f"{function_id} {kind} {name!r}: {code + ': ' if code else ''}{error_text(exc)}"
                refused.append(refusal)
                if refusal.retried:
                    # Logged when it starts or its text changes, not at every retry.
                    previous = held.get(key)
                    if previous is None or str(previous) != str(refusal):
                        self._log.warning("%s", refusal)
                    else:
                        self._log.debug("%s", refusal)
                    held[key] = refusal
                else:
                    self._log.error("%s", refusal)
                    held.pop(key, None)
                    with self._cond:
                        self._pending.discard(key)
                        self._cond.notify_all()
                continue
            held.pop(key, None)
            with self._cond:
                self._registry_present = True
                if self._items.get(key) is payload:
                    self._pending.discard(key)
                if key not in self._registered:
                    self._registered.append(key)
        return None
