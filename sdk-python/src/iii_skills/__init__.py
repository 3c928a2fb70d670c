"""Publish skills, section functions and prompts to the iii skills registry.

A publisher wraps the official ``iii-sdk`` client you already hold::

    from iii import register_worker
    from iii_skills import Publisher

    iii = register_worker()              # III_URL, else ws://127.0.0.1:49134
    publisher = Publisher(iii)
    publisher.skill("myworker", "# myworker\\n\\nWhat my tools are for.\\n")

    @publisher.section("myworker/status")
    def status() -> str:
        return "# Status\\n\\nAll good."

    publisher.start()                    # True once everything is registered

See ``docs/publishers.md`` for the contract this package shares with the Go
and Node publishers.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._registrar import Backoff, is_not_found
from .arguments import PromptArgument, PromptArgumentError
from .publisher import ChangeOp, Prompt, PromptChange, Publisher, Section, SkillChange, TypedFunction
from .validation import (
    InvalidContentError,
    debug_quote,
    section_uri,
    validate_id,
    validate_prompt,
    validate_prompt_name,
    validate_section_path,
    validate_skill,
)

try:
    __version__ = version("iii-skills")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "Backoff",
    "ChangeOp",
    "InvalidContentError",
    "Prompt",
    "PromptArgument",
    "PromptArgumentError",
    "PromptChange",
    "Publisher",
    "Section",
    "SkillChange",
    "TypedFunction",
    "__version__",
    "debug_quote",
    "is_not_found",
    "section_uri",
    "validate_id",
    "validate_prompt",
    "validate_prompt_name",
    "validate_section_path",
    "validate_skill",
]
