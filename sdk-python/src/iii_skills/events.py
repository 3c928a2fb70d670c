"""``iii_skills.events``, kept as an import path: the change events live in
``publisher.py`` beside the subscriptions that deliver them (``publisher.go`` /
``publisher.ts`` in Go and Node)."""

from .publisher import ChangeOp, PromptChange, SkillChange

__all__ = ["ChangeOp", "PromptChange", "SkillChange"]
