"""The engine address (docs/publishers.md, "The engine address").

The same rules and messages as the Go and Node SDKs
(conformance/vectors/engine_urls.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from . import _messages as m

__all__ = ["DEFAULT_ENGINE_URL", "engine_url"]

#: Where an iii engine listens for workers by default.
DEFAULT_ENGINE_URL = m.DEFAULT_ENGINE_URL

_PORT_PROBLEM = "the port is not a number from 1 to 65535"


def engine_url(url: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The engine's address, resolved as the official SDKs' ``register_worker`` does.

    ``url`` when given and not empty, else ``$III_URL``, else
    ``ws://127.0.0.1:49134``. An address that can never be an engine's (not
    ``ws://`` or ``wss://``, no host, a bad port, a fragment, a space, a
    control or a non-ASCII character) raises ``ValueError`` naming it and
    what is wrong, at once: the official client would retry it forever.

    Use it as ``register_worker(engine_url())``.
    """
    raw = url or ""
    source = ""
    if raw == "":
        raw = (os.environ if env is None else env).get("III_URL", "")
        source = " (from III_URL)"
        if raw == "":
            return DEFAULT_ENGINE_URL
    why = _problem(raw)
    if why is not None:
        raise ValueError(
            m.ENGINE_URL_INVALID.format(url=json.dumps(raw, ensure_ascii=False), source=source, why=why)
        )
    return raw


def _problem(raw: str) -> str | None:
    """What is wrong with an engine URL, or None.

    Read by hand, not with ``urllib.parse``, so the three SDKs (each with
    its own URL parser) give the same verdict.
    """
    if any(ord(ch) <= 0x20 or ord(ch) >= 0x7F for ch in raw):
        return "it holds a space, a control character or a non-ASCII character"
    scheme, sep, rest = raw.partition("://")
    if not sep or not scheme:
        return "it has no scheme"
    scheme = scheme.lower()
    if scheme not in ("ws", "wss"):
        return f"the scheme is {json.dumps(scheme)}, not ws or wss"
    if "#" in rest:
        return "it has a fragment (#…)"
    authority = rest
    for stop in "/?":
        authority = authority.split(stop, 1)[0]
    authority = authority.rsplit("@", 1)[-1]
    host, port = authority, ""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return "it has no host"
        host, port = authority[1:end], authority[end + 1 :]
        if port and not port.startswith(":"):
            return _PORT_PROBLEM
        port = port[1:]
    elif ":" in authority:
        host, port = authority.split(":", 1)
    if not host:
        return "it has no host"
    if port and (not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535):
        return _PORT_PROBLEM
    return None
