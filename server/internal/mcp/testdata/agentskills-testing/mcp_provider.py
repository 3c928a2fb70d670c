"""An Agent Skills provider (agentskills_core.SkillProvider) that reads a
skills server through the official MCP Python client: the MCP Skills
extension (skills/list, skills/get) and resources/read of skill:// URIs.

It is written as a plain client would write it: URIs are the skill id and
file name joined as they are, never percent-encoded, so names with spaces,
'%', non-ASCII letters or a NUL reach the server unencoded (and on
2026-07-28 the client then sends Mcp-Name Base64-wrapped). Errors map to
the provider contract by JSON-RPC code: -32602 (invalid params, which
2026-07-28 uses for an unknown resource) and -32002 (resource not found)
are "not found"; anything else is raised as it is.
"""

from __future__ import annotations

import base64
from copy import deepcopy
from typing import Any, Literal
from urllib.parse import unquote

import yaml
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import Request, RequestParams
from pydantic import TypeAdapter

from agentskills_core import (
    RESOURCE_KINDS,
    ResourceNotFoundError,
    SkillNotFoundError,
    SkillProvider,
)

NOT_FOUND = {-32602, -32002}
ANY = TypeAdapter(dict[str, Any])


class _UriParams(RequestParams):
    uri: str


class _CursorParams(RequestParams):
    cursor: str | None = None


class SkillsGet(Request[_UriParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class SkillsList(Request[_CursorParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


def _split(text: str) -> tuple[dict[str, Any], str]:
    """SKILL.md → (frontmatter, body)."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}, text
    return yaml.safe_load(text[4:end]) or {}, text[end + 5 :]


class McpSkillProvider(SkillProvider):
    supports_resource_listing = True
    supports_discovery = True

    def __init__(self, client: Client) -> None:
        self._client = client

    async def _get(self, skill_id: str) -> dict[str, Any]:
        req = SkillsGet(params=_UriParams(uri=f"skill://{skill_id}/SKILL.md"))
        try:
            res = await self._client.session.send_request(req, ANY)
        except MCPError as e:
            if e.error.code in NOT_FOUND:
                raise SkillNotFoundError(f"{skill_id}: {e.error.message}") from e
            raise
        return res["skill"]

    async def _read(self, uri: str) -> bytes:
        res = await self._client.read_resource(uri)
        (c,) = res.contents
        if getattr(c, "blob", None) is not None:
            return base64.b64decode(c.blob)
        return c.text.encode("utf-8")

    async def get_metadata(self, skill_id: str) -> dict[str, Any]:
        return deepcopy((await self._get(skill_id))["frontmatter"])

    async def get_body(self, skill_id: str) -> str:
        try:
            text = (await self._read(f"skill://{skill_id}/SKILL.md")).decode("utf-8")
        except MCPError as e:
            if e.error.code in NOT_FOUND:
                raise SkillNotFoundError(f"{skill_id}: {e.error.message}") from e
            raise
        return _split(text)[1]

    async def _resource(self, skill_id: str, kind: str, name: str) -> bytes:
        try:
            return await self._read(f"skill://{skill_id}/{kind}/{name}")
        except MCPError as e:
            if e.error.code in NOT_FOUND:
                raise ResourceNotFoundError(f"{skill_id}/{kind}/{name!r}: {e.error.message}") from e
            raise

    async def get_reference(self, skill_id: str, name: str) -> bytes:
        return await self._resource(skill_id, "references", name)

    async def get_script(self, skill_id: str, name: str) -> bytes:
        return await self._resource(skill_id, "scripts", name)

    async def get_asset(self, skill_id: str, name: str) -> bytes:
        return await self._resource(skill_id, "assets", name)

    async def list_resources(self, skill_id: str) -> dict[str, list[str]]:
        skill = await self._get(skill_id)
        prefix = skill["uri"].removesuffix("SKILL.md")
        out: dict[str, list[str]] = {kind: [] for kind in RESOURCE_KINDS}
        for r in skill["resources"]:
            kind, _, name = unquote(r["uri"].removeprefix(prefix)).partition("/")
            if kind in out and name and "/" not in name:
                out[kind].append(name)
        return {kind: sorted(names) for kind, names in out.items()}

    async def discover(self) -> list[str]:
        ids: list[str] = []
        cursor: str | None = None
        while True:
            res = await self._client.session.send_request(SkillsList(params=_CursorParams(cursor=cursor)), ANY)
            ids += [s["uri"].removeprefix("skill://").removesuffix("/SKILL.md") for s in res["skills"]]
            cursor = res.get("nextCursor")
            if not cursor:
                return sorted(ids)
