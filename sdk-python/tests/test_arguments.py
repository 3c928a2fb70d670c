"""Prompt argument derivation (pydantic models, type hints) and call-time checks."""

from __future__ import annotations

import enum
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from iii_skills import PromptArgument, PromptArgumentError
from iii_skills.arguments import arguments_from_model, check_arguments, derive_prompt_signature


class SendEmail(BaseModel):
    to: str = Field(description="Recipient address")
    subject: str = Field(description="Subject line")
    urgent: bool = Field(default=False, description="Mark as urgent")


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


class Everything(BaseModel):
    text: str
    count: int
    ratio: float
    flag: bool
    maybe: Optional[int] = None
    union_none: int | None = None
    mode: Literal["a", "b"] = "a"
    color: Color = Color.RED
    aliased: str = Field(default="x", alias="aliased-name", description="has an alias")


def wire(arguments: tuple[PromptArgument, ...]) -> list[dict[str, object]]:
    return [a.to_wire() for a in arguments]


def test_arguments_from_a_pydantic_model() -> None:
    assert wire(arguments_from_model(SendEmail)) == [
        {"name": "to", "required": True, "description": "Recipient address"},
        {"name": "subject", "required": True, "description": "Subject line"},
        {"name": "urgent", "required": False, "description": "Mark as urgent"},
    ]


def test_argument_types_and_aliases() -> None:
    arguments = arguments_from_model(Everything)
    assert [(a.name, a.type, a.required) for a in arguments] == [
        ("text", "string", True),
        ("count", "integer", True),
        ("ratio", "number", True),
        ("flag", "boolean", True),
        ("maybe", "integer", False),
        ("union_none", "integer", False),
        ("mode", "string", False),
        ("color", "string", False),
        ("aliased-name", "string", False),
    ]
    assert arguments[-1].field == "aliased"
    # a description is left out of the wire form when there is none
    assert arguments[0].to_wire() == {"name": "text", "required": True}


def test_unsupported_argument_type_is_refused() -> None:
    class Bad(BaseModel):
        tags: list[str]

    with pytest.raises(TypeError, match="prompt argument 'tags'"):
        arguments_from_model(Bad)


def test_signature_from_a_model_parameter() -> None:
    def handler(args: SendEmail) -> str:
        return args.to

    signature = derive_prompt_signature("send-email", handler)
    assert signature.call_style == "model"
    assert signature.model is SendEmail
    call_args, call_kwargs = signature.build_call({"to": "a@b.c", "subject": "s"})
    assert call_kwargs == {}
    assert call_args == (SendEmail(to="a@b.c", subject="s"),)


def test_signature_from_type_hints() -> None:
    def handler(
        to: Annotated[str, Field(description="Recipient address")],
        count: int,
        urgent: bool = Field(default=False, description="Mark as urgent"),
        *,
        tone: str = "friendly",
    ) -> str:
        return to

    signature = derive_prompt_signature("send-email", handler)
    assert signature.call_style == "kwargs"
    assert wire(signature.arguments) == [
        {"name": "to", "required": True, "description": "Recipient address"},
        {"name": "count", "required": True},
        {"name": "urgent", "required": False, "description": "Mark as urgent"},
        {"name": "tone", "required": False},
    ]
    _, kwargs = signature.build_call({"to": "x", "count": 3})
    assert kwargs == {"to": "x", "count": 3, "urgent": False, "tone": "friendly"}


def test_signature_with_explicit_args_model() -> None:
    def handler(values: object) -> str:
        return "x"

    signature = derive_prompt_signature("send-email", handler, SendEmail)
    assert signature.call_style == "model"
    assert [a.name for a in signature.arguments] == ["to", "subject", "urgent"]

    def two(a: str, b: str) -> str:
        return a

    with pytest.raises(TypeError, match="exactly one positional parameter"):
        derive_prompt_signature("p", two, SendEmail)


def test_signature_without_parameters() -> None:
    signature = derive_prompt_signature("dialogue", lambda: "hi")
    assert signature.call_style == "none"
    assert signature.arguments == ()
    assert signature.build_call({}) == ((), {})


def test_signature_errors() -> None:
    def untyped(to):  # type: ignore[no-untyped-def]
        return to

    with pytest.raises(TypeError, match="needs a type annotation"):
        derive_prompt_signature("p", untyped)

    def star(*args: str) -> str:
        return ""

    with pytest.raises(TypeError, match="no \\*args"):
        derive_prompt_signature("p", star)

    def underscore(_x: str) -> str:
        return _x

    with pytest.raises(TypeError, match="may not start with '_'"):
        derive_prompt_signature("p", underscore)


def problems(payload: object, model: type[BaseModel] = Everything, name: str = "p") -> str:
    with pytest.raises(PromptArgumentError) as caught:
        check_arguments(name, arguments_from_model(model), payload, model)
    return str(caught.value)


def test_contract_messages() -> None:
    assert problems({"subject": "s"}, SendEmail, "send-email") == (
        'prompt "send-email": missing required argument "to"'
    )

    class Count(BaseModel):
        count: int

    assert problems({"count": "abc"}, Count, "send-email") == (
        'prompt "send-email": argument "count" must be an integer, got "abc"'
    )


def test_every_problem_is_reported_in_order() -> None:
    message = problems({"count": "4.5", "ratio": "fast", "flag": "yes"})
    assert message == 'prompt "p": ' + "; ".join(
        [
            'missing required argument "text"',
            'argument "count" must be an integer, got "4.5"',
            'argument "ratio" must be a number, got "fast"',
            'argument "flag" must be a boolean, got "yes"',
        ]
    )
    assert problems({"text": 5, "count": True, "ratio": [1], "flag": 1}) == 'prompt "p": ' + "; ".join(
        [
            'argument "text" must be a string, got 5',
            'argument "count" must be an integer, got true',
            'argument "ratio" must be a number, got [1]',
            'argument "flag" must be a boolean, got 1',
        ]
    )
    with pytest.raises(PromptArgumentError) as caught:
        check_arguments("p", arguments_from_model(SendEmail), {}, SendEmail)
    assert caught.value.prompt == "p"
    assert caught.value.problems == (
        'missing required argument "to"',
        'missing required argument "subject"',
    )


def test_strings_from_mcp_convert_when_unambiguous() -> None:
    values = check_arguments(
        "p",
        arguments_from_model(Everything),
        {
            "text": "hello",
            "count": "+42",
            "ratio": "-1.5e2",
            "flag": "false",
            "maybe": "-7",
            "mode": "b",
            "color": "blue",
            "aliased-name": "y",
            "unknown": "ignored",
            "_caller_worker_id": "00000000-0000-0000-0000-000000000000",
        },
        Everything,
    )
    assert values == {
        "text": "hello",
        "count": 42,
        "ratio": -150.0,
        "flag": False,
        "maybe": -7,
        "mode": "b",
        "color": "blue",
        "aliased-name": "y",
    }


def test_native_json_types_are_accepted() -> None:
    values = check_arguments(
        "p",
        arguments_from_model(Everything),
        {"text": "t", "count": 3, "ratio": 2, "flag": True, "maybe": 4.0},
        Everything,
    )
    assert values == {"text": "t", "count": 3, "ratio": 2, "flag": True, "maybe": 4}


@pytest.mark.parametrize("text", [" 42", "42 ", "--4", "0x10", "1e3", "", "4.0", "٤٢"])
def test_ambiguous_integer_strings_are_refused(text: str) -> None:
    class Count(BaseModel):
        count: int

    assert "must be an integer" in problems({"count": text}, Count)


@pytest.mark.parametrize("text", ["True", "1", "yes", ""])
def test_ambiguous_boolean_strings_are_refused(text: str) -> None:
    class Flag(BaseModel):
        flag: bool

    assert "must be a boolean" in problems({"flag": text}, Flag)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1e999", ".", "1,5", " 1", "0x1"])
def test_ambiguous_number_strings_are_refused(text: str) -> None:
    class Ratio(BaseModel):
        ratio: float

    assert "must be a number" in problems({"ratio": text}, Ratio)


@pytest.mark.parametrize(("text", "value"), [(".5", 0.5), ("1.", 1.0), ("+2", 2.0), ("3E2", 300.0)])
def test_number_strings(text: str, value: float) -> None:
    class Ratio(BaseModel):
        ratio: float

    assert check_arguments("p", arguments_from_model(Ratio), {"ratio": text}, Ratio) == {"ratio": value}


def test_null_counts_as_absent() -> None:
    assert problems({"to": None, "subject": "s"}, SendEmail, "send-email") == (
        'prompt "send-email": missing required argument "to"'
    )
    optional = check_arguments(
        "send-email", arguments_from_model(SendEmail), {"to": "a", "subject": "s", "urgent": None}
    )
    assert optional == {"to": "a", "subject": "s"}


def test_missing_payload_reports_every_required_argument() -> None:
    assert problems(None, SendEmail, "send-email") == (
        'prompt "send-email": missing required argument "to"; missing required argument "subject"'
    )


def test_non_object_arguments() -> None:
    assert problems(["a"], SendEmail, "send-email") == (
        'prompt "send-email": arguments must be an object, got ["a"]'
    )


def test_model_constraints_are_reported_as_invalid_arguments() -> None:
    class Constrained(BaseModel):
        to: str = Field(min_length=3)
        mode: Literal["a", "b"] = "a"

    message = problems({"to": "ab", "mode": "c"}, Constrained)
    assert message == (
        'prompt "p": argument "to": String should have at least 3 characters; '
        "argument \"mode\": Input should be 'a' or 'b'"
    )
