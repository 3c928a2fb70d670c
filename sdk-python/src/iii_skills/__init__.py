"""Publish skills, section functions and prompts to the iii skills registry.

A publisher wraps the official ``iii-sdk`` client you already hold::

    from iii import register_worker
    from iii_skills import Publisher, engine_url

    iii = register_worker(engine_url())  # III_URL, else ws://127.0.0.1:49134
    publisher = Publisher(iii)
    publisher.skill("myworker", "# myworker\\n\\nWhat my tools are for.\\n")

    @publisher.section("myworker/status")
    def status() -> str:
        return "# Status\\n\\nAll good."

    result = publisher.start()           # true once everything is registered

See ``docs/publishers.md`` for the contract this package shares with the Go
and Node publishers, and the name of every concept in each of them.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import _messages as _m
from ._engine_url import DEFAULT_ENGINE_URL, engine_url
from ._refusal import Holder, Rejection
from ._registrar import Backoff, RegistrationResult, is_not_found
from ._signing import canonical_prompt
from .arguments import PromptArgument, PromptArgumentError
from .publisher import ChangeOp, Prompt, PromptChange, Publisher, Section, SkillChange, TypedFunction
from .validation import (
    InvalidContentError,
    ValidationError,
    debug_quote,
    section_function_id,
    section_uri,
    validate_id,
    validate_prompt,
    validate_prompt_name,
    validate_section_path,
    validate_skill,
    validate_skill_body,
    validate_skill_id,
)

try:
    __version__ = version("iii-skills")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

#: Logged, at warning level and exactly, when registration gives up while
#: the registry is absent or does not answer.
GAVE_UP_MESSAGE: str = _m.GAVE_UP

__all__ = [
    "Backoff",
    "ChangeOp",
    "DEFAULT_ENGINE_URL",
    "GAVE_UP_MESSAGE",
    "Holder",
    "InvalidContentError",
    "Prompt",
    "PromptArgument",
    "PromptArgumentError",
    "PromptChange",
    "Publisher",
    "RegistrationResult",
    "Rejection",
    "Section",
    "SkillChange",
    "TypedFunction",
    "ValidationError",
    "__version__",
    "canonical_prompt",
    "debug_quote",
    "engine_url",
    "is_not_found",
    "section_function_id",
    "section_uri",
    "validate_id",
    "validate_prompt",
    "validate_prompt_name",
    "validate_section_path",
    "validate_skill",
    "validate_skill_body",
    "validate_skill_id",
]
