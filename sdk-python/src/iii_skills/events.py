"""Typed change events of the registry's ``skills::on-change`` / ``prompts::on-change``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ChangeOp", "PromptChange", "SkillChange"]

ChangeOp = Literal["register", "unregister"]


def _op(payload: Mapping[str, Any]) -> ChangeOp | None:
    op = payload.get("op")
    if op == "register":
        return "register"
    if op == "unregister":
        return "unregister"
    return None


@dataclass(frozen=True)
class SkillChange:
    """A skill was registered (or re-registered) or removed."""

    op: ChangeOp
    id: str

    @classmethod
    def from_payload(cls, payload: Any) -> SkillChange | None:
        """Decode ``{"op", "id"}``; keys the engine adds are ignored. ``None`` if malformed."""
        if not isinstance(payload, Mapping):
            return None
        op, skill_id = _op(payload), payload.get("id")
        if op is None or not isinstance(skill_id, str):
            return None
        return cls(op=op, id=skill_id)


@dataclass(frozen=True)
class PromptChange:
    """A prompt was registered (or re-registered) or removed."""

    op: ChangeOp
    name: str

    @classmethod
    def from_payload(cls, payload: Any) -> PromptChange | None:
        """Decode ``{"op", "name"}``; keys the engine adds are ignored. ``None`` if malformed."""
        if not isinstance(payload, Mapping):
            return None
        op, name = _op(payload), payload.get("name")
        if op is None or not isinstance(name, str):
            return None
        return cls(op=op, name=name)
