"""The conformance fixtures of conformance/DRIVER.md, written with this SDK's types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field

from .publisher import Prompt, Publisher, TypedFunction


class SendEmailArgs(BaseModel):
    """Arguments of the ``send-email`` prompt (derived from a pydantic model)."""

    to: str = Field(description="Recipient address")
    subject: str = Field(description="Subject line")
    urgent: bool = Field(default=False, description="Mark as urgent")


def send_email(args: SendEmailArgs) -> dict[str, str]:
    text = f'Compose an email to {args.to} with the subject "{args.subject}".'
    if args.urgent:
        text += " Mark it urgent."
    return {"content": text}


def count_words(limit: Annotated[int, Field(description="Maximum words")]) -> str:
    """The ``count-words`` prompt (arguments derived from the handler's type hints)."""
    return f"Use at most {limit} words."


def dialogue() -> dict[str, Any]:
    """The ``dialogue`` prompt: no arguments, a two-message conversation."""
    return {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "assistant", "content": {"type": "text", "text": "hello"}},
        ]
    }


class EchoRequest(BaseModel):
    message: str
    repeat: int


class EchoResponse(BaseModel):
    echo: str


def echo(request: EchoRequest) -> EchoResponse:
    """The ``echo`` typed function: ``message`` repeated ``repeat`` times."""
    return EchoResponse(echo=request.message * request.repeat)


_PROMPTS: dict[str, tuple[str, Callable[..., Any]]] = {
    "send-email": ("Compose and send an email", send_email),
    "count-words": ("Limit the length of the answer", count_words),
    "dialogue": ("A canned two-message dialogue", dialogue),
}
_FUNCTIONS: dict[str, tuple[str, Callable[..., Any]]] = {
    "echo": ("Echo a message a number of times", echo),
}


def prompt_fixtures() -> list[str]:
    return sorted(_PROMPTS)


def add_prompt(
    publisher: Publisher, fixture: str, name: str | None = None, signature: str | None = None
) -> Prompt[..., Any]:
    """Register prompt fixture ``fixture`` under ``name`` (default: the fixture name)."""
    try:
        description, handler = _PROMPTS[fixture]
    except KeyError:
        raise ValueError(
            f"unknown prompt fixture {fixture!r} (known: {', '.join(sorted(_PROMPTS))})"
        ) from None
    return publisher.prompt(name if name is not None else fixture, description, handler, signature=signature)


def add_function(publisher: Publisher, fixture: str, function_id: str) -> TypedFunction[..., Any]:
    """Register typed-function fixture ``fixture`` under ``function_id``."""
    try:
        description, handler = _FUNCTIONS[fixture]
    except KeyError:
        raise ValueError(
            f"unknown function fixture {fixture!r} (known: {', '.join(sorted(_FUNCTIONS))})"
        ) from None
    return publisher.function(function_id, handler, description=description)
