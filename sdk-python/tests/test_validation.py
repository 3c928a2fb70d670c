"""Local validation: the registry's rules and exact messages (docs/publishers.md)."""

from __future__ import annotations

import pytest

import iii_skills
from iii_skills import (
    ValidationError,
    debug_quote,
    section_function_id,
    section_uri,
    validate_prompt,
    validate_section_path,
    validate_skill_body,
    validate_skill_id,
)
from iii_skills.validation import is_internal_function

SEG_CHARS = "segment may only contain lowercase ASCII letters, digits, '-' and '_'"


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("a\nb\tc\rd\0e", '"a\\nb\\tc\\rd\\0e"'),
        ("esc\x1b", '"esc\\u{1b}"'),
        ("caf\u00e9", '"caf\u00e9"'),
        ("zero\u200bwidth", '"zero\\u{200b}width"'),
        ("e\u0301", '"e\\u{301}"'),
        ("nb\u00a0sp", '"nb\\u{a0}sp"'),
        ("it's", '"it\'s"'),
    ],
)
def test_debug_quote_matches_rust(value: str, quoted: str) -> None:
    assert debug_quote(value) == quoted


@pytest.mark.parametrize(
    "skill_id",
    ["a", "my-skill-1", "resend/email/send", "docs/fn-reference", "a_b/c-d/0", "x" * 64],
)
def test_valid_ids(skill_id: str) -> None:
    validate_skill_id(skill_id)


@pytest.mark.parametrize(
    ("skill_id", "message"),
    [
        ("", "id must be non-empty"),
        ("x/", "id may not have a leading or trailing '/': \"x/\""),
        ("/x", "id may not have a leading or trailing '/': \"/x\""),
        ("UpperCase", f'invalid id (segment 1 of "UpperCase"): {SEG_CHARS}: "UpperCase"'),
        ("a//b", 'invalid id (segment 2 of "a//b"): segment must be non-empty'),
        (
            "ok/" + "b" * 65,
            f'invalid id (segment 2 of "ok/{"b" * 65}"): segment too long (65 chars; max 64): "{"b" * 65}"',
        ),
        (
            "anything/state::set",
            f'invalid id (segment 2 of "anything/state::set"): {SEG_CHARS}: "state::set"',
        ),
        (
            "fn/anything",
            'id may not have "fn" as its first segment (reserved as the iii://fn/ '
            'section-URI marker): "fn/anything"',
        ),
        ("fn", 'id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn"'),
    ],
)
def test_invalid_ids(skill_id: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_skill_id(skill_id)
    assert str(caught.value) == message


def test_id_too_long_counts_bytes() -> None:
    skill_id = "/".join(["a" * 60] * 17)  # 17*60 + 16 = 1036 bytes
    with pytest.raises(ValidationError) as caught:
        validate_skill_id(skill_id)
    assert str(caught.value) == f"id too long (1036 chars; max 1024): {debug_quote(skill_id)}"


def test_non_ascii_segment_is_refused_with_byte_length() -> None:
    segment = "é" * 40  # 80 bytes
    with pytest.raises(ValidationError) as caught:
        validate_skill_id(segment)
    assert "segment too long (80 chars; max 64)" in str(caught.value)


def test_skill_body_rules() -> None:
    validate_skill_body(" ")  # whitespace is content
    validate_skill_body("a" * 262144)  # exactly the limit is fine
    with pytest.raises(ValidationError, match="^skill must be non-empty$"):
        validate_skill_body("")
    with pytest.raises(ValidationError) as caught:
        validate_skill_body("é" * 131073)
    assert str(caught.value) == "skill body too large (262146 bytes; max 262144)"
    # the id is checked first
    with pytest.raises(ValidationError, match="^id must be non-empty$"):
        validate_skill_id("")


@pytest.mark.parametrize("path", ["resend/health", "a", "a/b/c/d", "state", "skill/fetch", "x/fn"])
def test_valid_section_paths(path: str) -> None:
    validate_section_path(path)
    assert section_uri(path) == "iii://fn/" + path
    assert section_function_id(path) == path.replace("/", "::")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("Bad-Case", f'invalid section URI segment "Bad-Case": {SEG_CHARS}: "Bad-Case"'),
        ("a/b::c", f'invalid section URI segment "b::c": {SEG_CHARS}: "b::c"'),
        ("a b", f'invalid section URI segment "a b": {SEG_CHARS}: "a b"'),
        (
            "a/" + "z" * 65,
            f'invalid section URI segment "{"z" * 65}": segment too long (65 chars; max 64): "{"z" * 65}"',
        ),
        ("", 'invalid section URI segment "": segment must be non-empty'),
        ("a//b", 'invalid section URI segment "": segment must be non-empty'),
        ("/a", 'invalid section URI segment "": segment must be non-empty'),
        ("a/", 'invalid section URI segment "": segment must be non-empty'),
        ("state/set", "Function 'state::set' is in an internal namespace and cannot back a skill resource"),
        ("skills/register", "Function 'skills::register' is in an internal namespace and cannot back a skill resource"),
        ("engine/x", "Function 'engine::x' is in an internal namespace and cannot back a skill resource"),
        ("stream/x", "Function 'stream::x' is in an internal namespace and cannot back a skill resource"),
        ("a2a/x", "Function 'a2a::x' is in an internal namespace and cannot back a skill resource"),
        ("iii/x", "Function 'iii::x' is in an internal namespace and cannot back a skill resource"),
        ("mcp/handler", "Function 'mcp::handler' is in an internal namespace and cannot back a skill resource"),
        ("prompts/list", "Function 'prompts::list' is in an internal namespace and cannot back a skill resource"),
    ],
)
def test_invalid_section_paths(path: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_section_path(path)
    assert str(caught.value) == message


def test_internal_namespaces() -> None:
    assert is_internal_function("iii.on_foo")
    assert not is_internal_function("skill::fetch")
    assert not is_internal_function("state")


@pytest.mark.parametrize(
    ("name", "description", "function_id", "arguments", "message"),
    [
        ("", "d", "f", [], "name must be non-empty"),
        ("n" * 65, "d", "f", [], "name too long (65 chars; max 64)"),
        (
            "BadName",
            "d",
            "f",
            [],
            "name may only contain lowercase ASCII letters, digits, '-' and '_': \"BadName\"",
        ),
        (
            "mcp::send",
            "d",
            "f",
            [],
            "name may only contain lowercase ASCII letters, digits, '-' and '_': \"mcp::send\"",
        ),
        ("ok", "  \t", "f", [], "description must be non-empty"),
        ("ok", "d", " ", [], "function_id must be non-empty"),
        ("ok", "d", "f", ["to", " "], "argument name must be non-empty"),
        ("ok", "d", "f", ["to", "to"], "duplicate argument name: to"),
        (
            "ok",
            "d",
            "state::set",
            [],
            "Prompt handler 'state::set' is in an internal namespace and cannot back a prompt",
        ),
    ],
)
def test_invalid_prompts(
    name: str, description: str, function_id: str, arguments: list[str], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_prompt(name, description, function_id, arguments)
    assert str(caught.value) == message


def test_valid_prompt() -> None:
    validate_prompt("send-email", "Compose and send an email", "prompt::send-email", ["to", "subject"])


def test_deprecated_names_warn_and_do_the_same_for_one_release() -> None:
    assert iii_skills.InvalidContentError is ValidationError
    with pytest.warns(DeprecationWarning, match="use validate_skill_id"):
        with pytest.raises(ValidationError, match="^id must be non-empty$"):
            iii_skills.validate_id("")
    with pytest.warns(DeprecationWarning, match="use validate_skill_id and validate_skill_body"):
        with pytest.raises(ValidationError, match="^id must be non-empty$"):
            iii_skills.validate_skill("", "")  # the id first, as before
    with pytest.warns(DeprecationWarning):
        with pytest.raises(ValidationError, match="^skill must be non-empty$"):
            iii_skills.validate_skill("x", "")
    with pytest.warns(DeprecationWarning, match="use section_function_id"):
        assert iii_skills.validation.function_id_for_section("a/b") == "a::b"
