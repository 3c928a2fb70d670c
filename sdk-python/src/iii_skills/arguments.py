"""Prompt arguments: derived from types, checked before the handler runs.

The argument list a prompt registers (name, description, required) comes from
a pydantic model or from the handler's own parameters:

* a handler whose single parameter is a ``BaseModel`` subclass (or any
  handler given ``args=Model``) gets the model's fields;
* any other handler gets one argument per parameter, typed by its annotation,
  described by ``Annotated[T, Field(description=...)]`` or a ``Field(...)``
  default, required when it has no default.

Arguments are strings, integers, numbers or booleans (``Optional`` of one of
them, a ``Literal`` or an ``Enum`` of strings or integers). MCP ``prompts/get``
sends every value as a string, so a typed argument also accepts a string that
converts unambiguously; every problem is reported in one message.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pydantic
from pydantic import BaseModel

from . import _messages as m
from .validation import debug_quote

__all__ = [
    "ArgumentType",
    "PromptArgument",
    "PromptArgumentError",
    "PromptSignature",
    "arguments_from_model",
    "check_arguments",
    "derive_prompt_signature",
]

ArgumentType = Literal["string", "integer", "number", "boolean"]

_TYPE_WORDS: dict[ArgumentType, str] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
}
# Strings that convert unambiguously (the Node and Go publishers accept the same).
_INTEGER_TEXT = re.compile(r"[-+]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
# Keys the engine adds to every payload a worker sends.
_ENGINE_KEYS = frozenset({"_caller_worker_id"})


class PromptArgumentError(ValueError):
    """The arguments of one prompt call were refused; the message lists every problem.

    ``str(error)`` is ``prompt "name": problem; problem``; ``problems`` holds
    the problems on their own.
    """

    def __init__(self, prompt: str, problems: Sequence[str]) -> None:
        self.prompt = prompt
        self.problems = tuple(problems)
        super().__init__(
            m.PROMPT_PREFIX.format(name=debug_quote(prompt))
            + m.PROBLEM_SEPARATOR.join(self.problems)
        )


@dataclass(frozen=True)
class PromptArgument:
    """One declared prompt argument, as ``prompts::register`` receives it."""

    name: str
    description: str | None
    required: bool
    type: ArgumentType
    #: The model attribute the value lands in (differs from ``name`` with an alias).
    field: str

    def to_wire(self) -> dict[str, Any]:
        """The ``arguments[]`` entry of ``prompts::register``."""
        entry: dict[str, Any] = {"name": self.name, "required": self.required}
        if self.description is not None:
            entry["description"] = self.description
        return entry


CallStyle = Literal["none", "model", "kwargs"]


@dataclass(frozen=True)
class PromptSignature:
    """How a prompt handler is called and which arguments it declares."""

    model: type[BaseModel] | None
    arguments: tuple[PromptArgument, ...]
    call_style: CallStyle
    #: For ``kwargs``: (parameter name, model attribute) pairs.
    parameters: tuple[tuple[str, str], ...] = ()

    def build_call(self, values: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments for the handler, from checked values."""
        if self.call_style == "none" or self.model is None:
            return (), {}
        instance = self.model.model_validate(dict(values))
        if self.call_style == "model":
            return (instance,), {}
        return (), {param: getattr(instance, attr) for param, attr in self.parameters}


def _unwrap(annotation: Any) -> Any:
    """Drop ``Annotated`` metadata and a ``None`` member of a union."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin is Union or origin is types.UnionType:
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _argument_type(annotation: Any) -> ArgumentType | None:
    annotation = _unwrap(annotation)
    if annotation is bool:
        return "boolean"
    if annotation is int:
        return "integer"
    if annotation is float:
        return "number"
    if annotation is str:
        return "string"
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        if values and all(isinstance(v, str) for v in values):
            return "string"
        if values and all(isinstance(v, bool) for v in values):
            return "boolean"
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return "integer"
        return None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        if issubclass(annotation, str):
            return "string"
        if issubclass(annotation, int):
            return "integer"
    return None


def arguments_from_model(model: type[BaseModel]) -> tuple[PromptArgument, ...]:
    """The prompt arguments a pydantic model declares, in field order.

    Raises:
        TypeError: a field's type is not one a prompt argument can carry.
    """
    arguments = []
    for attr, field in model.model_fields.items():
        name = field.alias if isinstance(field.alias, str) else attr
        kind = _argument_type(field.annotation)
        if kind is None:
            raise TypeError(
                f"prompt argument {name!r} of {model.__name__} has type {field.annotation!r}; "
                "prompt arguments are str, int, float or bool "
                "(optionally Optional, a Literal or an Enum of them)"
            )
        arguments.append(
            PromptArgument(
                name=name,
                description=field.description,
                required=field.is_required(),
                type=kind,
                field=attr,
            )
        )
    return tuple(arguments)


def type_hints(
    handler: Callable[..., Any], localns: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The handler's resolved annotations (``localns``: where it was declared).

    Raises:
        TypeError: an annotation cannot be resolved.
    """
    target = handler
    if not inspect.isfunction(target) and not inspect.ismethod(target):
        call = getattr(type(target), "__call__", None)
        if call is not None:
            target = call
    try:
        return typing.get_type_hints(
            target, localns=dict(localns) if localns is not None else None, include_extras=True
        )
    except Exception as exc:  # NameError for an unresolvable forward reference, and kin
        raise TypeError(f"cannot resolve the type hints of {handler!r}: {exc}") from exc


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def derive_prompt_signature(
    prompt_name: str,
    handler: Callable[..., Any],
    args: type[BaseModel] | None = None,
    localns: Mapping[str, Any] | None = None,
) -> PromptSignature:
    """Work out a prompt's arguments and calling convention from ``handler``.

    ``localns`` resolves string annotations naming classes local to the
    function that declared the handler.

    Raises:
        TypeError: the handler's parameters cannot describe prompt arguments.
    """
    parameters = list(inspect.signature(handler).parameters.values())
    hints = type_hints(handler, localns)
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )

    if args is not None:
        if not _is_model(args):
            raise TypeError(f"prompt {prompt_name!r}: args must be a pydantic BaseModel subclass")
        if len(parameters) != 1 or parameters[0].kind not in positional:
            raise TypeError(
                f"prompt {prompt_name!r}: a handler given args={args.__name__} "
                "takes exactly one positional parameter (the model instance)"
            )
        return PromptSignature(args, arguments_from_model(args), "model")

    if not parameters:
        return PromptSignature(None, (), "none")

    first = parameters[0]
    if len(parameters) == 1 and first.kind in positional and _is_model(hints.get(first.name)):
        model = hints[first.name]
        return PromptSignature(model, arguments_from_model(model), "model")

    fields: dict[str, Any] = {}
    pairs: list[tuple[str, str]] = []
    for param in parameters:
        if param.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            raise TypeError(
                f"prompt {prompt_name!r}: parameter {param.name!r} must be a plain or "
                "keyword-only parameter (no *args, **kwargs or positional-only)"
            )
        if param.name not in hints:
            raise TypeError(
                f"prompt {prompt_name!r}: parameter {param.name!r} needs a type annotation"
            )
        if param.name.startswith("_"):
            raise TypeError(
                f"prompt {prompt_name!r}: parameter {param.name!r} may not start with '_'"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
        pairs.append((param.name, param.name))
    model_name = "".join(part.capitalize() for part in re.split(r"[-_]", prompt_name) if part)
    model = pydantic.create_model(f"{model_name or 'Prompt'}Arguments", **fields)
    return PromptSignature(model, arguments_from_model(model), "kwargs", tuple(pairs))


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def _convert(kind: ArgumentType, value: Any) -> tuple[bool, Any]:
    """(accepted, converted value) for one argument of type ``kind``."""
    if kind == "string":
        return isinstance(value, str), value
    if kind == "boolean":
        if isinstance(value, bool):
            return True, value
        if value == "true":
            return True, True
        if value == "false":
            return True, False
        return False, value
    if kind == "integer":
        if isinstance(value, bool):
            return False, value
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            return True, int(value)
        return False, value
    # number
    if isinstance(value, bool):
        return False, value
    if isinstance(value, (int, float)):
        return True, value
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
        number = float(value)
        if number not in (float("inf"), float("-inf")):
            return True, number
    return False, value


def check_arguments(
    prompt_name: str,
    arguments: Sequence[PromptArgument],
    payload: Any,
    model: type[BaseModel] | None = None,
) -> dict[str, Any]:
    """Check and convert the arguments of one prompt call.

    Returns the converted values keyed by argument name (absent optional
    arguments are left out, so the model's defaults apply). Unknown keys and
    the keys the engine adds are ignored; ``null`` counts as absent.

    Raises:
        PromptArgumentError: with every problem.
    """
    if payload is None:
        payload = {}
    if not isinstance(payload, Mapping):
        raise PromptArgumentError(prompt_name, [m.ARGS_NOT_OBJECT.format(got=_json_text(payload))])

    problems: list[str] = []
    values: dict[str, Any] = {}
    for argument in arguments:
        if argument.name in _ENGINE_KEYS:
            continue
        raw = payload.get(argument.name)
        quoted = debug_quote(argument.name)
        if raw is None:
            if argument.required:
                problems.append(m.ARG_MISSING.format(arg=quoted))
            continue
        accepted, converted = _convert(argument.type, raw)
        if not accepted:
            problems.append(
                m.ARG_WRONG_TYPE.format(
                    arg=quoted, type_word=_TYPE_WORDS[argument.type], got=_json_text(raw)
                )
            )
            continue
        values[argument.name] = converted

    if not problems and model is not None:
        try:
            model.model_validate(values)
        except pydantic.ValidationError as exc:
            for error in exc.errors(include_url=False):
                location = error.get("loc") or ()
                reason = error.get("msg", "")
                problems.append(
                    m.ARG_INVALID.format(arg=debug_quote(str(location[0])), reason=reason)
                    if location
                    else reason
                )
    if problems:
        raise PromptArgumentError(prompt_name, problems)
    return values
