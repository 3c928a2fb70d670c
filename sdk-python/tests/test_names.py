"""docs/publishers.md ("Names in each SDK") names every concept in the three SDKs.

This test holds the Python column to the package: every name it lists
exists, and every export of ``iii_skills`` (and every public method of
``Publisher``) is listed, so renaming one here without the table fails.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import iii_skills
from iii_skills import Publisher

DOC = Path(__file__).resolve().parents[2] / "docs" / "publishers.md"


def names_table(column: int) -> list[str]:
    """The backticked names of one column of the table (1: Go, 2: Node, 3: Python)."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("| concept | Go ")), None)
    assert start is not None, 'docs/publishers.md has no names table ("| concept | Go …")'
    out: list[str] = []
    rows = 0
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip("|").split("|")
        assert len(cells) == 5, f"names table row: {line}"
        rows += 1
        out += re.findall(r"`([^`]+)`", cells[column])
    assert rows >= 30 and len(out) >= 60, f"names table: {rows} rows, {len(out)} names; did it move?"
    return out


def _has(owner: object, member: str) -> bool:
    if hasattr(owner, member):
        return True
    fields = getattr(owner, "__dataclass_fields__", {})
    return member in fields


def test_the_table_lists_only_names_the_package_exports() -> None:
    missing = []
    for name in names_table(3):
        owner_name, _, member = name.partition(".")
        if owner_name not in iii_skills.__all__:
            missing.append(name)
        elif member and not _has(getattr(iii_skills, owner_name), member):
            missing.append(name)
    assert missing == [], "listed in docs/publishers.md but not exported by iii_skills"


def test_the_table_lists_every_export_and_every_public_method_of_publisher() -> None:
    listed = set(names_table(3))
    unlisted = [name for name in iii_skills.__all__ if name not in listed]
    for member, value in inspect.getmembers(Publisher):
        if member.startswith("_"):
            continue
        if callable(value) or isinstance(value, property):
            if f"Publisher.{member}" not in listed:
                unlisted.append(f"Publisher.{member}")
    assert unlisted == [], "exported by iii_skills but not listed in docs/publishers.md"


def test_refusal_types_carry_the_table_fields() -> None:
    # Frozen dataclasses: a field without a default is no class attribute,
    # so the table check reads the dataclass fields too.
    assert [f.name for f in dataclasses.fields(iii_skills.Rejection)] == [
        "kind", "name", "code", "message", "holder", "advice", "retried",
    ]
