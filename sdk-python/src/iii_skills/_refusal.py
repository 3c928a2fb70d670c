"""How the publisher reads a refused ``skills::register`` / ``prompts::register``.

docs/publishers.md, "Refusals". The Go and Node publishers read it the same
way, with the same advice and log lines (conformance/vectors/refusals.json).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Literal

from . import _messages as m

__all__ = ["Holder", "Rejection", "gave_up_held_message", "is_permanent", "refusal_of"]


@dataclasses.dataclass(frozen=True)
class Holder:
    """The worker that holds an id this publisher was refused (``FORBIDDEN``)."""

    #: The engine's id of the worker's connection.
    worker_id: str
    #: The name it gave the engine, as the registry's web page shows it; None when not named.
    worker_name: str | None = None

    def __str__(self) -> str:
        if self.worker_name is None:
            return f"worker {self.worker_id}"
        return f"worker {_quote(self.worker_name)} ({self.worker_id})"


@dataclasses.dataclass(frozen=True)
class Rejection:
    """One skill or prompt the registry refused, with advice that fits the refusal's code.

    ``str(rejection)`` is the line the publisher logs. ``retried`` is True
    when another worker holds the id (``FORBIDDEN``): the publisher keeps
    trying until its registration deadline, and the id passes to it once that
    worker is gone. Validation refusals (``INVALID_ARGUMENTS``), ids outside
    the token's namespaces (``OUT_OF_SCOPE``) and signatures the registry
    does not take (``UNSIGNED``, ``BAD_SIGNATURE``) are not retried.
    """

    kind: Literal["skill", "prompt"]
    #: The skill's id or the prompt's name.
    name: str
    #: The registry's error code ("" when it sent none).
    code: str
    #: The registry's message.
    message: str
    #: The worker that holds the id (FORBIDDEN), when the registry names it.
    holder: Holder | None
    #: What to do about it.
    advice: str
    retried: bool

    def __str__(self) -> str:
        return m.REFUSAL_LINE.format(
            kind=self.kind,
            name=_quote(self.name),
            code=f" ({self.code})" if self.code else "",
            message=self.message,
            advice=self.advice,
        )


def _quote(value: str) -> str:
    """JSON quoting, as the Go and Node publishers quote names."""
    return json.dumps(value, ensure_ascii=False)


def error_code(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else ""


def error_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    return text or type(exc).__name__


def is_permanent(exc: BaseException) -> bool:
    """Whether the registry will refuse the same call again.

    Bad input (``INVALID_ARGUMENTS``, or a validation message from a registry
    that sends no code) or an id outside the namespaces of the publisher's
    scoped token (``OUT_OF_SCOPE``), or a signature the registry does not
    take (``UNSIGNED``, ``BAD_SIGNATURE``). ``FORBIDDEN`` (another connection
    holds the id) is not: it clears up when that connection goes.
    """
    if error_code(exc) in (
        m.CODE_INVALID_ARGUMENTS,
        m.CODE_OUT_OF_SCOPE,
        m.CODE_INVALID_REQUEST,
        m.CODE_UNSIGNED,
        m.CODE_BAD_SIGNATURE,
    ):
        return True
    text = error_text(exc)
    return any(marker in text for marker in m.PERMANENT_MARKERS)


# How the registry names the holder of an id: ``belongs to another worker
# (<id>)`` or ``(<id>, named "<name>")``, the name a JSON string.
_HOLDER = re.compile(r'belongs to another worker \(([^,()\s]+)(?:, named ("(?:[^"\\]|\\.)*"))?\)')


def holder_of(message: str) -> Holder | None:
    """The holder named in a FORBIDDEN message; None when the text names none."""
    match = _HOLDER.search(message)
    if match is None:
        return None
    name: str | None = None
    if match.group(2) is not None:
        try:
            decoded = json.loads(match.group(2))
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            name = decoded
    return Holder(worker_id=match.group(1), worker_name=name)


def refusal_of(kind: Literal["skill", "prompt"], name: str, exc: BaseException) -> Rejection | None:
    """Read a failed register call of ``kind`` ``name``.

    A :class:`Rejection` when the registry refused this item (permanently,
    or because another worker holds the id); None when the failure is not
    about the item (the registry is absent or did not answer).
    """
    code = error_code(exc)
    message = error_text(exc)
    holder: Holder | None = None
    if code == m.CODE_FORBIDDEN:
        holder = holder_of(message)
        who = "the worker that holds it" if holder is None else f"{holder}, which holds it"
        advice = m.ADVICE_HELD.format(holder=who, what="name" if kind == "prompt" else "id")
    elif code == m.CODE_OUT_OF_SCOPE:
        advice = m.ADVICE_OUT_OF_SCOPE
    elif code == m.CODE_UNSIGNED:
        advice = m.ADVICE_UNSIGNED
    elif code == m.CODE_BAD_SIGNATURE:
        advice = m.ADVICE_BAD_SIGNATURE
    elif is_permanent(exc):
        advice = m.ADVICE_INVALID.format(kind=kind)
    else:
        return None
    return Rejection(
        kind=kind,
        name=name,
        code=code,
        message=message,
        holder=holder,
        advice=advice,
        retried=code == m.CODE_FORBIDDEN,
    )


def gave_up_held_message(held: Iterable[Rejection]) -> str:
    """The warning logged instead of the handshake message when the deadline
    passes while every missing item is held by another worker: the registry
    runs, so "install / start it" would mislead."""
    items = ", ".join(f"{r.kind} {_quote(r.name)}" for r in held)
    return m.GAVE_UP_HELD.format(items=items)
