"""The publisher: skills, sections, prompts and typed functions on an official iii client.

Also the typed change events its subscriptions deliver, as Go and Node keep
them in ``publisher.go`` / ``publisher.ts``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import itertools
import logging
import os
import sys
import threading
import uuid
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Literal, ParamSpec, TypeVar, cast, overload

import pydantic
from pydantic import BaseModel, TypeAdapter

from . import _messages as m
from ._client import Client, Registration
from ._engine_url import engine_url
from ._refusal import error_text
from ._registrar import Backoff, RegistrationResult, _Registrar
from ._signing import SigningKey, canonical_prompt
from .arguments import PromptArgument, check_arguments, derive_prompt_signature, type_hints
from .validation import validate_prompt, validate_section_path, validate_skill_body, validate_skill_id

__all__ = ["ChangeOp", "Prompt", "PromptChange", "Publisher", "Section", "SkillChange", "TypedFunction"]

P = ParamSpec("P")
R = TypeVar("R")
E = TypeVar("E")


class Section(Generic[R]):
    """A registered section handler: call it like the function it wraps.

    ``uri`` is its ``iii://fn/…`` section URI, ``function_id`` the iii
    function behind it.
    """

    def __init__(self, handler: Callable[[], R], path: str) -> None:
        functools.update_wrapper(self, handler)
        self.handler = handler
        self.path = path
        self.uri = "iii://fn/" + path
        self.function_id = path.replace("/", "::")

    def __call__(self) -> R:
        return self.handler()

    def __repr__(self) -> str:
        return f"Section({self.uri!r})"


class Prompt(Generic[P, R]):
    """A registered prompt handler: call it like the function it wraps."""

    def __init__(
        self,
        handler: Callable[P, R],
        name: str,
        description: str,
        function_id: str,
        arguments: tuple[PromptArgument, ...],
    ) -> None:
        functools.update_wrapper(self, handler)
        self.handler = handler
        self.name = name
        self.description = description
        self.function_id = function_id
        self.arguments = arguments

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Prompt({self.name!r}, function_id={self.function_id!r})"


class TypedFunction(Generic[P, R]):
    """A registered function whose ``request_format`` / ``response_format`` came from its types."""

    def __init__(
        self,
        handler: Callable[P, R],
        function_id: str,
        request_format: dict[str, Any] | None,
        response_format: dict[str, Any] | None,
    ) -> None:
        functools.update_wrapper(self, handler)
        self.handler = handler
        self.function_id = function_id
        self.request_format = request_format
        self.response_format = response_format

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"TypedFunction({self.function_id!r})"


# The events of skills::on-change / prompts::on-change, as subscriptions deliver them.

ChangeOp = Literal["register", "unregister"]


def _change_op(payload: Mapping[str, Any]) -> ChangeOp | None:
    op = payload.get("op")
    if op == "register":
        return "register"
    if op == "unregister":
        return "unregister"
    return None


@dataclasses.dataclass(frozen=True)
class SkillChange:
    """A skill was registered (or re-registered) or removed."""

    op: ChangeOp
    id: str

    @classmethod
    def from_payload(cls, payload: Any) -> SkillChange | None:
        """Decode ``{"op", "id"}``; keys the engine adds are ignored. ``None`` if malformed."""
        if not isinstance(payload, Mapping):
            return None
        op, skill_id = _change_op(payload), payload.get("id")
        if op is None or not isinstance(skill_id, str):
            return None
        return cls(op=op, id=skill_id)


@dataclasses.dataclass(frozen=True)
class PromptChange:
    """A prompt was registered (or re-registered) or removed."""

    op: ChangeOp
    name: str

    @classmethod
    def from_payload(cls, payload: Any) -> PromptChange | None:
        """Decode ``{"op", "name"}``; keys the engine adds are ignored. ``None`` if malformed."""
        if not isinstance(payload, Mapping):
            return None
        op, name = _change_op(payload), payload.get("name")
        if op is None or not isinstance(name, str):
            return None
        return cls(op=op, name=name)


def _caller_namespace() -> Mapping[str, Any]:
    """Locals of the frame that called the public method calling this one.

    Handlers declared inside a function may name classes local to it in
    string annotations (``from __future__ import annotations``); those only
    resolve with that frame's locals.
    """
    try:
        return dict(sys._getframe(2).f_locals)
    except ValueError:
        return {}


def _refuse_in_event_loop(call: str, instead: str) -> None:
    """Blocking calls would stall (or, on the client's own loop, deadlock) a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"{call} blocks and cannot run inside an event loop; use {instead}")


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    return call is not None and inspect.iscoroutinefunction(call)


async def _call_user(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a user handler: async ones on the client's loop, sync ones on a thread."""
    if _is_async(fn):
        result = await fn(*args, **kwargs)
    else:
        result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _with_meta(payload: dict[str, Any], message: str | None, author: str | None) -> dict[str, Any]:
    """Add a version's message and author to a register payload when given."""
    if message:
        payload["message"] = message
    if author:
        payload["author"] = author
    return payload


def _normalize_prompt_output(value: Any) -> Any:
    """Accept what the registry accepts (string, {messages: [...]}, {content: string})."""
    value = _jsonable(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            return dict(value)
        if isinstance(value.get("content"), str):
            return dict(value)
    raise TypeError(m.PROMPT_UNSUPPORTED_SHAPE)


class Publisher:
    """Publishes skills, section functions, prompts and typed functions through ``iii``.

    ``iii`` is the official client (``iii.register_worker(...)``); the publisher
    never speaks the wire protocol itself. Functions (sections, prompt handlers,
    typed functions, change subscriptions) are registered with the client as
    soon as they are declared, and the client replays them on every
    reconnection. Skills and prompts are registered with the registry by
    :meth:`start`, retried with capped exponential backoff, and registered again
    whenever the engine connection comes back or the registry reappears.

    Args:
        iii: the official client. One whose engine address can never connect
            (the official client would retry it forever) is refused at once
            with ``ValueError``, the message of :func:`~iii_skills.engine_url`.
        backoff: retry schedule of registration rounds (contract defaults).
        call_timeout: timeout of each registry call, in seconds (default 5).
        logger: where the publisher logs (default ``logging.getLogger("iii_skills")``).
        internal_namespace: namespace of the internal functions this
            publisher registers (default ``iii-skills::<random>``, so several
            publishers can share a client).
        signing_key: an OpenSSH key file (as ssh-keygen writes it:
            ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa) that signs
            every skill body and prompt definition this publisher registers
            (docs/trust.md): an unencrypted private key signs here; an
            encrypted one or a public key file (``.pub``) signs through the
            ssh-agent at ``SSH_AUTH_SOCK``, which must hold the key. Read
            here: a file that is no usable key, or an agent that cannot sign
            with it, raises ``ValueError`` saying why and what to do.
        name: deprecated: ``internal_namespace="iii-skills::<name>"``;
            removed in the next release.
    """

    def __init__(
        self,
        iii: Client,
        *,
        backoff: Backoff | None = None,
        call_timeout: float = 5.0,
        logger: logging.Logger | None = None,
        internal_namespace: str | None = None,
        name: str | None = None,
        signing_key: str | os.PathLike[str] | None = None,
    ) -> None:
        if call_timeout <= 0:
            raise ValueError("call_timeout must be positive")
        # The official client keeps its address in ``_address`` (iii-sdk
        # 0.24–0.25; test_publisher pins it): check it, since the client
        # itself retries a malformed one forever.
        address = getattr(iii, "_address", None)
        if isinstance(address, str) and address:
            engine_url(address)
        if name is not None:
            warnings.warn(
                "Publisher(name=...) is deprecated and removed in the next release; "
                f'use internal_namespace="iii-skills::{name}"',
                DeprecationWarning,
                stacklevel=2,
            )
            internal_namespace = internal_namespace or f"iii-skills::{name}"
        self._signing_key = None if signing_key is None else SigningKey.load(os.fspath(signing_key))
        self._iii = iii
        self._call_timeout_ms = max(1, int(call_timeout * 1000))
        self._log = logger or logging.getLogger("iii_skills")
        self._internal_namespace = internal_namespace or f"iii-skills::{uuid.uuid4().hex[:12]}"
        self._counter = itertools.count(1)

        self._lock = threading.RLock()
        self._closed = False
        self._registrations: list[Registration] = []
        self._function_ids: set[str] = set()
        self._prompt_names: set[str] = set()

        self._registrar = _Registrar(
            iii,
            backoff=backoff or Backoff(),
            call_timeout_ms=self._call_timeout_ms,
            log=self._log,
            thread_name=f"{self._internal_namespace}-registrar",
            watch=self._watch_registry,
        )

    # ------------------------------------------------------------------ settings

    @property
    def backoff(self) -> Backoff:
        """The retry schedule; may be replaced until :meth:`start`."""
        return self._registrar.backoff

    @backoff.setter
    def backoff(self, value: Backoff) -> None:
        self._registrar.backoff = value

    # ------------------------------------------------------------------ content

    def skill(
        self,
        id: str,
        markdown: str,
        *,
        message: str | None = None,
        author: str | None = None,
        signature: str | None = None,
    ) -> None:
        """Add a skill (``iii://{id}``), validated with the registry's rules.

        Registered by :meth:`start` (or right away when already started);
        adding an id again replaces its body. ``message`` and ``author``
        describe the version a changed body becomes in the registry's
        history (unchanged content makes no version). With ``signing_key``
        the body is signed here, once; ``signature`` sends one made elsewhere
        (``ssh-keygen -Y sign -n iii-skills``, ``skills sign``) instead.

        Raises:
            ValidationError: the registry would refuse it (its exact message).
        """
        validate_skill_id(id)
        validate_skill_body(markdown)
        payload = _with_meta({"id": id, "skill": markdown}, message, author)
        self._registrar.add(("skill", id), self._signed(payload, signature, markdown))

    @overload
    def section(
        self, path: str, handler: None = None, *, description: str | None = None
    ) -> Callable[[Callable[[], R]], Section[R]]: ...

    @overload
    def section(
        self, path: str, handler: Callable[[], R], *, description: str | None = None
    ) -> Section[R]: ...

    def section(
        self,
        path: str,
        handler: Callable[[], R] | None = None,
        *,
        description: str | None = None,
    ) -> Section[R] | Callable[[Callable[[], R]], Section[R]]:
        """Register the function behind the section URI ``iii://fn/{path}``.

        Use as ``@publisher.section("a/b")`` or ``publisher.section("a/b", fn)``.
        The handler takes no arguments (sync or async) and returns a string,
        ``{"content": "..."}`` or any JSON value (a pydantic model is dumped).
        The returned :class:`Section` calls the handler and carries ``.uri``.

        Raises:
            ValidationError: the path is not a valid section path.
        """
        validate_section_path(path)
        if handler is None:

            def decorate(fn: Callable[[], R]) -> Section[R]:
                return self._add_section(path, fn, description=description)

            return decorate
        return self._add_section(path, handler, description=description)

    def section_uri(self, path: str) -> str:
        """``iii://fn/{path}`` after validating ``path`` like :meth:`section` does."""
        validate_section_path(path)
        return "iii://fn/" + path

    def _add_section(
        self, path: str, handler: Callable[[], R], *, description: str | None = None
    ) -> Section[R]:
        section = Section(handler, path)

        async def serve(data: Any) -> Any:
            return _jsonable(await _call_user(handler))

        self._register_function(section.function_id, serve, description=description)
        return section

    @overload
    def prompt(
        self,
        name: str,
        description: str,
        handler: None = None,
        *,
        args: type[BaseModel] | None = None,
        function_id: str | None = None,
        message: str | None = None,
        author: str | None = None,
        signature: str | None = None,
    ) -> Callable[[Callable[P, R]], Prompt[P, R]]: ...

    @overload
    def prompt(
        self,
        name: str,
        description: str,
        handler: Callable[P, R],
        *,
        args: type[BaseModel] | None = None,
        function_id: str | None = None,
        message: str | None = None,
        author: str | None = None,
        signature: str | None = None,
    ) -> Prompt[P, R]: ...

    def prompt(
        self,
        name: str,
        description: str,
        handler: Callable[P, R] | None = None,
        *,
        args: type[BaseModel] | None = None,
        function_id: str | None = None,
        message: str | None = None,
        author: str | None = None,
        signature: str | None = None,
    ) -> Prompt[P, R] | Callable[[Callable[P, R]], Prompt[P, R]]:
        """Register a slash-command prompt and its handler function.

        Use as ``@publisher.prompt(name="send-email", description="...")``.
        The argument list comes from ``args`` (a pydantic model), from a
        handler whose single parameter is a pydantic model, or from the
        handler's annotated parameters (descriptions from ``Field``, required
        when there is no default). Arguments are checked before the handler
        runs (see :mod:`iii_skills.arguments`). The handler (sync or async)
        returns a string, ``{"content": ...}`` or ``{"messages": [...]}``.
        The handler function id defaults to ``prompt::{name}``. ``message``
        and ``author`` describe the version a changed definition becomes in
        the registry's history. With ``signing_key`` the prompt's canonical
        JSON (:func:`~iii_skills.canonical_prompt`) is signed; ``signature``
        sends one made elsewhere (``skills sign --prompt``) instead.

        Raises:
            ValidationError: the registry would refuse the prompt.
            TypeError: the handler's types cannot describe prompt arguments.
        """
        fid = function_id if function_id is not None else f"prompt::{name}"
        validate_prompt(name, description, fid, [])
        localns = _caller_namespace()
        if handler is None:

            def decorate(fn: Callable[P, R]) -> Prompt[P, R]:
                return self._add_prompt(name, description, fn, args, fid, localns, message, author, signature)

            return decorate
        return self._add_prompt(name, description, handler, args, fid, localns, message, author, signature)

    def _add_prompt(
        self,
        name: str,
        description: str,
        handler: Callable[P, R],
        args: type[BaseModel] | None,
        function_id: str,
        localns: Mapping[str, Any],
        message: str | None = None,
        author: str | None = None,
        given_signature: str | None = None,
    ) -> Prompt[P, R]:
        signature = derive_prompt_signature(name, handler, args, localns)
        validate_prompt(name, description, function_id, [a.name for a in signature.arguments])
        with self._lock:
            if name in self._prompt_names:
                raise ValueError(f"prompt {name!r} was already added to this publisher")

        async def render(data: Any) -> Any:
            values = check_arguments(name, signature.arguments, data, signature.model)
            call_args, call_kwargs = signature.build_call(values)
            return _normalize_prompt_output(await _call_user(handler, *call_args, **call_kwargs))

        self._register_function(function_id, render, description=description)
        with self._lock:
            self._prompt_names.add(name)
        arguments = [argument.to_wire() for argument in signature.arguments]
        payload = _with_meta(
            {"name": name, "description": description, "function_id": function_id, "arguments": arguments},
            message,
            author,
        )
        content = canonical_prompt(description, function_id, arguments)
        self._registrar.add(("prompt", name), self._signed(payload, given_signature, content))
        return Prompt(handler, name, description, function_id, signature.arguments)

    @overload
    def function(
        self,
        function_id: str,
        handler: None = None,
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Callable[[Callable[P, R]], TypedFunction[P, R]]: ...

    @overload
    def function(
        self,
        function_id: str,
        handler: Callable[P, R],
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> TypedFunction[P, R]: ...

    def function(
        self,
        function_id: str,
        handler: Callable[P, R] | None = None,
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> TypedFunction[P, R] | Callable[[Callable[P, R]], TypedFunction[P, R]]:
        """Register a function whose request/response JSON Schemas come from its types.

        The handler takes zero or one parameter; its annotation (a pydantic
        model or any type pydantic understands) gives ``request_format`` and
        validates each request, the return annotation gives
        ``response_format`` and serializes the result. Sync or async.

        Raises:
            TypeError: the handler has more than one parameter or no usable types.
        """
        if not function_id.strip():
            raise ValueError("function_id must be non-empty")
        localns = _caller_namespace()
        if handler is None:

            def decorate(fn: Callable[P, R]) -> TypedFunction[P, R]:
                return self._add_function(function_id, fn, description, metadata, localns)

            return decorate
        return self._add_function(function_id, handler, description, metadata, localns)

    def _add_function(
        self,
        function_id: str,
        handler: Callable[P, R],
        description: str | None,
        metadata: dict[str, Any] | None,
        localns: Mapping[str, Any],
    ) -> TypedFunction[P, R]:
        parameters = list(inspect.signature(handler).parameters.values())
        if len(parameters) > 1:
            raise TypeError(
                f"function {function_id!r}: the handler takes at most one parameter (the request)"
            )
        hints = type_hints(handler, localns)
        request_adapter: TypeAdapter[Any] | None = None
        if parameters:
            if parameters[0].name not in hints:
                raise TypeError(
                    f"function {function_id!r}: parameter {parameters[0].name!r} "
                    "needs a type annotation"
                )
            request_adapter = TypeAdapter(hints[parameters[0].name])
        returns = hints.get("return")
        response_adapter: TypeAdapter[Any] | None = None
        if returns is not None and returns is not type(None):
            response_adapter = TypeAdapter(returns)
        request_format = request_adapter.json_schema() if request_adapter else None
        response_format = response_adapter.json_schema() if response_adapter else None

        async def run(data: Any) -> Any:
            if request_adapter is None:
                result = await _call_user(handler)
            else:
                try:
                    request = request_adapter.validate_python(data)
                except pydantic.ValidationError as exc:
                    problems = "; ".join(
                        f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}"
                        for e in exc.errors(include_url=False)
                    )
                    raise ValueError(
                        f"function {function_id!r}: invalid request: {problems}"
                    ) from None
                result = await _call_user(handler, request)
            if response_adapter is not None:
                return response_adapter.dump_python(result, mode="json")
            return _jsonable(result)

        self._register_function(
            function_id,
            run,
            description=description,
            metadata=metadata,
            request_format=request_format,
            response_format=response_format,
        )
        return TypedFunction(handler, function_id, request_format, response_format)

    # ------------------------------------------------------------------ subscriptions

    def on_skill_change(self, handler: Callable[[SkillChange], E]) -> Callable[[SkillChange], E]:
        """Call ``handler`` with a :class:`SkillChange` on every ``skills::on-change`` event.

        Usable as a decorator; returns ``handler``. Sync or async.
        """
        self._subscribe(m.TRIGGER_SKILLS_ON_CHANGE, "on-skill-change", SkillChange.from_payload, handler)
        return handler

    def on_prompt_change(
        self, handler: Callable[[PromptChange], E]
    ) -> Callable[[PromptChange], E]:
        """Call ``handler`` with a :class:`PromptChange` on every ``prompts::on-change`` event.

        Usable as a decorator; returns ``handler``. Sync or async.
        """
        self._subscribe(
            m.TRIGGER_PROMPTS_ON_CHANGE, "on-prompt-change", PromptChange.from_payload, handler
        )
        return handler

    def _subscribe(
        self,
        trigger_type: str,
        label: str,
        decode: Callable[[Any], Any],
        handler: Callable[[Any], Any],
    ) -> None:
        function_id = f"{self._internal_namespace}::{label}-{next(self._counter)}"

        async def deliver(data: Any) -> None:
            event = decode(data)
            if event is None:
                self._log.warning("ignored a malformed %s event: %r", trigger_type, data)
                return
            await _call_user(handler, event)

        self._register_function(function_id, deliver, metadata={"internal": True})
        self._register_trigger(trigger_type, function_id)

    def on_registered(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on the publisher's thread) after each complete registration round."""
        self._registrar.on_registered(callback)
        return callback

    def on_gave_up(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on the publisher's thread) when registration gives up."""
        self._registrar.on_gave_up(callback)
        return callback

    # ------------------------------------------------------------------ history

    def label_skill(
        self, id: str, label: str, version: int | str, *, admin_token: str | None = None
    ) -> dict[str, Any]:
        """Point ``label`` (production, staging, ...; never ``latest``) at a version of skill ``id``.

        ``version`` is a version number or another label. ``admin_token`` is
        needed for the registry's protected labels. Moving the registry's
        serve label changes what every reader is served. Returns the
        registry's answer ``{"id", "label", "version", "previous"?}``; a
        refusal raises the client's error with the registry's message.
        """
        return self._move_label(m.FN_SKILLS_LABEL, {"id": id}, label, version, admin_token)

    def label_prompt(
        self, name: str, label: str, version: int | str, *, admin_token: str | None = None
    ) -> dict[str, Any]:
        """:meth:`label_skill` for prompt ``name``."""
        return self._move_label(m.FN_PROMPTS_LABEL, {"name": name}, label, version, admin_token)

    def skill_versions(self, id: str) -> dict[str, Any]:
        """The kept versions of skill ``id``, newest first, and its labels."""
        return cast(dict[str, Any], self._call(m.FN_SKILLS_VERSIONS, {"id": id}))

    def prompt_versions(self, name: str) -> dict[str, Any]:
        """The kept versions of prompt ``name``, newest first, and its labels."""
        return cast(dict[str, Any], self._call(m.FN_PROMPTS_VERSIONS, {"name": name}))

    def _move_label(
        self, function_id: str, key: dict[str, Any], label: str, version: int | str, admin_token: str | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {**key, "label": label, "version": version}
        if admin_token:
            payload["admin_token"] = admin_token
        return cast(dict[str, Any], self._call(function_id, payload))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RegistrationResult:
        """Register every skill and prompt with the registry, retrying with backoff.

        Blocks until every item is registered (``registered=True``),
        registration gave up after the backoff's deadline (``False``, no
        refusals), or a round met refusals (``False`` with every refusal of
        that round in ``rejected``, each a :class:`~iii_skills.Rejection`
        with its code, the holder of an id another worker holds, and advice;
        everything else of that round was registered, held ids are retried).
        The result is true exactly when ``registered`` is. Never raises for
        those. Afterwards the publisher keeps the registry up to date by
        itself: it registers everything again when the client reconnects to
        the engine and when ``skills::register`` reappears in
        ``engine::functions-available``.
        """
        _refuse_in_event_loop("start()", "await publisher.start_async()")
        return self._registrar.start()

    async def start_async(self) -> RegistrationResult:
        """:meth:`start` for async code (runs it on a worker thread)."""
        return await asyncio.to_thread(self.start)

    def start_in_background(self) -> None:
        """Like :meth:`start` without waiting; watch :meth:`on_registered` / :meth:`on_gave_up`."""
        self._registrar.begin()

    def close(self, unregister: bool = False) -> None:
        """Stop retrying and remove this publisher's functions and triggers.

        With ``unregister``, also calls ``skills::unregister`` /
        ``prompts::unregister`` for every skill and prompt this publisher
        registered. The client itself stays open (it belongs to the caller).
        """
        _refuse_in_event_loop("close()", "await publisher.close_async()")
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._registrar.close()
        if unregister:
            for kind, key in self._registrar.registered_items():
                if kind == "skill":
                    self._call_quietly(m.FN_SKILLS_UNREGISTER, {"id": key})
                else:
                    self._call_quietly(m.FN_PROMPTS_UNREGISTER, {"name": key})
        for registration in reversed(self._registrations):
            try:
                registration.unregister()
            except Exception:
                self._log.exception("unregistering a function or trigger failed")
        self._registrations.clear()

    async def close_async(self, unregister: bool = False) -> None:
        """:meth:`close` for async code (runs it on a worker thread)."""
        await asyncio.to_thread(self.close, unregister)

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _register_function(
        self,
        function_id: str,
        handler: Callable[[Any], Awaitable[Any]],
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        request_format: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the publisher is closed")
            if function_id in self._function_ids:
                raise ValueError(f"function {function_id!r} is already registered by this publisher")
            self._function_ids.add(function_id)
        try:
            ref = self._iii.register_function(
                function_id,
                handler,
                description=description,
                metadata=metadata,
                request_format=request_format,
                response_format=response_format,
            )
        except BaseException:
            with self._lock:
                self._function_ids.discard(function_id)
            raise
        with self._lock:
            self._registrations.append(cast(Registration, ref))

    def _register_trigger(self, trigger_type: str, function_id: str) -> None:
        # iii-sdk 0.25 deprecates register_trigger for observe, which only
        # engines with observe.v1 speak and which cannot bind the registry's
        # custom trigger types: the publisher keeps register_trigger and keeps
        # the deprecation (a warning plus a log line once per process) out of
        # the user's output, since the user never called it.
        with warnings.catch_warnings(), _dropping_log(_SDK_LOGGER, _DEPRECATED_REGISTER_TRIGGER):
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=_DEPRECATED_REGISTER_TRIGGER)
            ref = self._iii.register_trigger(
                {"type": trigger_type, "function_id": function_id, "config": {}}
            )
        with self._lock:
            self._registrations.append(cast(Registration, ref))

    def _watch_registry(self, handler: Callable[[Any], None]) -> None:
        """Bind ``handler`` to ``engine::functions-available`` (the registrar's watcher)."""
        function_id = f"{self._internal_namespace}::functions-available"

        async def on_functions(data: Any) -> None:
            handler(data)

        self._register_function(function_id, on_functions, metadata={"internal": True})
        self._register_trigger(m.TRIGGER_FUNCTIONS_AVAILABLE, function_id)

    def _signed(self, payload: dict[str, Any], given: str | None, content: str) -> dict[str, Any]:
        """Add the signature of ``content`` to a register payload: the one
        given, else one made with the signing key (once, here:
        re-registrations send it again), else none."""
        if given is None and self._signing_key is not None:
            given = self._signing_key.sign(content)
        if given is not None:
            payload["signature"] = given
        return payload

    def _call(self, function_id: str, payload: dict[str, Any]) -> Any:
        return self._iii.trigger(
            {"function_id": function_id, "payload": payload, "timeout_ms": self._call_timeout_ms}
        )

    def _call_quietly(self, function_id: str, payload: dict[str, Any]) -> None:
        try:
            self._call(function_id, payload)
        except Exception as exc:
            self._log.warning("%s %s failed: %s", function_id, payload, error_text(exc))

#: The logger and message of iii-sdk 0.25's register_trigger deprecation.
_SDK_LOGGER = "iii.iii"
_DEPRECATED_REGISTER_TRIGGER = "register_trigger is deprecated"


class _dropping_log(logging.Filter):
    """Context manager: while active, drop records of ``logger`` whose message
    starts with ``prefix``."""

    def __init__(self, logger: str, prefix: str) -> None:
        super().__init__()
        self._logger = logging.getLogger(logger)
        self._prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self._prefix)

    def __enter__(self) -> None:
        self._logger.addFilter(self)

    def __exit__(self, *exc: object) -> None:
        self._logger.removeFilter(self)
