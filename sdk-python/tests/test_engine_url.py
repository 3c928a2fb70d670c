"""The engine-address rules shared with the Go and Node SDKs.

``conformance/vectors/engine_urls.json``: the same cases and messages in the
three; and the publisher refuses a client whose address can never connect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from iii import InitOptions
from iii.iii import III

from iii_skills import DEFAULT_ENGINE_URL, Publisher, engine_url

from .fakes import FakeClient

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "conformance" / "vectors" / "engine_urls.json").read_text("utf-8")
)["engine_url"]


def test_has_the_shared_cases() -> None:
    assert len(VECTORS) >= 20


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: f"{c['input']!r} III_URL={c.get('env')!r}")
def test_engine_url(case: dict[str, Any]) -> None:
    env = {} if "env" not in case else {"III_URL": case["env"]}
    if "error" in case:
        with pytest.raises(ValueError) as caught:
            engine_url(case["input"], env)
        assert str(caught.value) == case["error"]
    else:
        assert engine_url(case["input"], env) == case["url"]


def test_engine_url_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("III_URL", raising=False)
    assert engine_url() == DEFAULT_ENGINE_URL
    monkeypatch.setenv("III_URL", "ws://10.1.2.3:4")
    assert engine_url() == "ws://10.1.2.3:4"


def test_publisher_refuses_a_client_whose_address_cannot_connect() -> None:
    client = FakeClient()
    client._address = "http://127.0.0.1:49134"  # type: ignore[attr-defined]
    with pytest.raises(ValueError) as caught:
        Publisher(client)
    assert str(caught.value) == (
        'invalid engine URL "http://127.0.0.1:49134": the scheme is "http", not ws or wss; '
        "expected ws://host:port or wss://host:port"
    )


def test_the_official_client_keeps_its_address_where_the_publisher_reads_it() -> None:
    # Publisher checks the official client's ``_address`` (it retries a
    # malformed one forever): pinned here for every iii-sdk release tested.
    client = III("ws://127.0.0.1:1", InitOptions(worker_name="pytest-address"))
    try:
        assert client._address == "ws://127.0.0.1:1"
    finally:
        client.shutdown()
