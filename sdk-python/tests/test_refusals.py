"""How a refused register call is read, shared with the Go and Node publishers.

``conformance/vectors/refusals.json``: verdict, holder, advice and log line
for each case, and the warning when only held ids are missing at the deadline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iii_skills import Holder, Rejection
from iii_skills._refusal import gave_up_held_message, refusal_of

from .fakes import FakeInvocationError

FILE = json.loads(
    (Path(__file__).resolve().parents[2] / "conformance" / "vectors" / "refusals.json").read_text("utf-8")
)


def test_has_the_shared_cases() -> None:
    assert len(FILE["refusal"]) >= 15 and len(FILE["gave_up_held"]) >= 2


@pytest.mark.parametrize("case", FILE["refusal"], ids=lambda c: f"{c['code']}:{c['message'][:40]}")
def test_refusal(case: dict[str, Any]) -> None:
    refusal = refusal_of(case["kind"], case["name"], FakeInvocationError(case["code"], case["message"]))
    if case["verdict"] == "transient":
        assert refusal is None
        return
    assert refusal is not None
    assert ("held" if refusal.retried else "rejected") == case["verdict"]
    assert (refusal.code, refusal.message) == (case["code"], case["message"])
    holder = case.get("holder")
    assert refusal.holder == (None if holder is None else Holder(holder["worker_id"], holder.get("worker_name")))
    assert refusal.advice == case["advice"]
    assert str(refusal) == case["line"]


@pytest.mark.parametrize("case", FILE["gave_up_held"])
def test_gave_up_while_held(case: dict[str, Any]) -> None:
    held = [Rejection(h["kind"], h["name"], "FORBIDDEN", "", None, "", True) for h in case["held"]]
    assert gave_up_held_message(held) == case["message"]
