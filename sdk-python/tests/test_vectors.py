"""The validation vectors shared with the Go and Node publishers.

``conformance/vectors/validation.json`` holds the registry's rules as cases
(input → accepted, or the exact message); the three publishers' copies of
the rules are checked against the same file, so they cannot drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iii_skills import (
    ValidationError,
    section_function_id,
    validate_prompt,
    validate_prompt_name,
    validate_skill_body,
    validate_skill_id,
)

VECTORS_PATH = Path(__file__).resolve().parents[2] / "conformance" / "vectors" / "validation.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))


def expand(value: Any) -> str:
    """A vector string: a string, or parts to concatenate ({repeat, times} repeats a string)."""
    if isinstance(value, str):
        return value
    out: list[str] = []
    for part in value:
        if isinstance(part, dict):
            out.append(str(part["repeat"]) * int(part["times"]))
        else:
            out.append(expand(part))
    return "".join(out)


def cases(group: str) -> list[Any]:
    found = VECTORS[group]
    assert isinstance(found, list) and found, f"vector group {group} is empty"
    return found


def verdict(check: Any, *args: Any) -> str | None:
    try:
        check(*args)
    except ValidationError as exc:
        return str(exc)
    return None


def want(case: dict[str, Any]) -> str | None:
    return expand(case["error"]) if "error" in case else None


@pytest.mark.parametrize("case", cases("skill_id"))
def test_skill_id(case: dict[str, Any]) -> None:
    assert verdict(validate_skill_id, expand(case["input"])) == want(case)


@pytest.mark.parametrize("case", cases("skill_body"))
def test_skill_body(case: dict[str, Any]) -> None:
    assert verdict(validate_skill_body, expand(case["input"])) == want(case)


@pytest.mark.parametrize("case", cases("section_path"))
def test_section_path(case: dict[str, Any]) -> None:
    path = expand(case["input"])
    if "error" in case:
        assert verdict(section_function_id, path) == want(case)
    else:
        assert section_function_id(path) == case["function_id"]


@pytest.mark.parametrize("case", cases("prompt_name"))
def test_prompt_name(case: dict[str, Any]) -> None:
    assert verdict(validate_prompt_name, expand(case["input"])) == want(case)


@pytest.mark.parametrize("case", cases("prompt"))
def test_prompt(case: dict[str, Any]) -> None:
    p = case["input"]
    got = verdict(validate_prompt, p["name"], p["description"], p["function_id"], p["arguments"])
    assert got == want(case)
