"""Local validation with the registry's own rules and messages.

Every function here raises :class:`ValidationError` whose message is the
exact string the registry (upstream skills worker v0.2.2) would answer with,
so a mistake surfaces where the content is declared instead of minutes later
in a registration round. All length limits count UTF-8 bytes, as upstream.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Iterable

from . import _messages as m

__all__ = [
    "InvalidContentError",
    "ValidationError",
    "debug_quote",
    "function_id_for_section",
    "is_internal_function",
    "section_function_id",
    "section_uri",
    "validate_argument_names",
    "validate_id",
    "validate_id_segment",
    "validate_prompt",
    "validate_prompt_name",
    "validate_section_path",
    "validate_skill",
    "validate_skill_body",
    "validate_skill_id",
]


class ValidationError(ValueError):
    """Content the registry would refuse; ``str(error)`` is the registry's message.

    The Go and Node publishers name it ``ValidationError`` too.
    """


#: Deprecated: the old name of :class:`ValidationError` (the same class, so
#: ``except InvalidContentError`` keeps working); removed in the next release.
InvalidContentError = ValidationError


# Characters with the Unicode property Other_Grapheme_Extend (the part of
# Grapheme_Extend that is not Mn or Me), which Rust's `{:?}` escapes.
_OTHER_GRAPHEME_EXTEND: tuple[tuple[int, int], ...] = (
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B57, 0x0B57),
    (0x0BBE, 0x0BBE), (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6),
    (0x0D3E, 0x0D3E), (0x0D57, 0x0D57), (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF),
    (0x1B35, 0x1B35), (0x200C, 0x200C), (0x302E, 0x302F), (0xFF9E, 0xFF9F),
    (0x1133E, 0x1133E), (0x11357, 0x11357), (0x114B0, 0x114B0),
    (0x114BD, 0x114BD), (0x115AF, 0x115AF), (0x11930, 0x11930),
    (0x1D165, 0x1D165), (0x1D16E, 0x1D172), (0xE0020, 0xE007F),
)
_NOT_PRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
_SIMPLE_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"'}
_SEGMENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
# Unicode White_Space, which Rust's str::trim removes (Python's str.strip
# would also remove U+001C..U+001F).
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _needs_unicode_escape(ch: str) -> bool:
    code = ord(ch)
    if ch == " ":
        return False
    category = unicodedata.category(ch)
    if category in _NOT_PRINTABLE or category in ("Mn", "Me"):
        return True
    return any(lo <= code <= hi for lo, hi in _OTHER_GRAPHEME_EXTEND)


def debug_quote(value: str) -> str:
    """Quote ``value`` like Rust's ``format!("{:?}", value)`` does for a ``str``.

    Double quotes around it; ``"`` ``\\`` NUL tab CR LF get backslash escapes;
    non-printable and grapheme-extending characters become ``\\u{hex}``;
    everything else, printable non-ASCII included, is written as is.
    """
    out = ['"']
    for ch in value:
        simple = _SIMPLE_ESCAPES.get(ch)
        if simple is not None:
            out.append(simple)
        elif " " <= ch < "\x7f":
            out.append(ch)
        elif _needs_unicode_escape(ch):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _valid_chars(value: str) -> bool:
    return all(ch in _SEGMENT_CHARS for ch in value)


def _rust_trim(value: str) -> str:
    return value.strip(_WHITE_SPACE)


def _segment_error(segment: str) -> str | None:
    if segment == "":
        return m.SEGMENT_EMPTY
    if _byte_len(segment) > m.MAX_SEGMENT_LEN:
        return m.SEGMENT_TOO_LONG.format(
            n=_byte_len(segment), max=m.MAX_SEGMENT_LEN, segment=debug_quote(segment)
        )
    if not _valid_chars(segment):
        return m.SEGMENT_CHARS.format(segment=debug_quote(segment))
    return None


def validate_id_segment(segment: str) -> None:
    """One ``/``-separated segment: non-empty, ≤ 64 bytes, only ``[a-z0-9_-]``."""
    error = _segment_error(segment)
    if error is not None:
        raise ValidationError(error)


def validate_skill_id(skill_id: str) -> None:
    """A skill id, checked in the registry's order; the first failure wins."""
    if skill_id == "":
        raise ValidationError(m.ID_EMPTY)
    quoted = debug_quote(skill_id)
    if skill_id.startswith("/") or skill_id.endswith("/"):
        raise ValidationError(m.ID_EDGE_SLASH.format(id=quoted))
    if _byte_len(skill_id) > m.MAX_ID_LEN:
        raise ValidationError(
            m.ID_TOO_LONG.format(n=_byte_len(skill_id), max=m.MAX_ID_LEN, id=quoted)
        )
    segments = skill_id.split("/")
    for index, segment in enumerate(segments, start=1):
        error = _segment_error(segment)
        if error is not None:
            raise ValidationError(m.ID_SEGMENT.format(i=index, id=quoted, error=error))
    if segments[0] == "fn":
        raise ValidationError(m.ID_RESERVED.format(id=quoted))


def validate_skill_body(markdown: str) -> None:
    """A skill body: non-empty, at most 256 KiB."""
    if markdown == "":
        raise ValidationError(m.SKILL_EMPTY)
    size = _byte_len(markdown)
    if size > m.MAX_SKILL_BYTES:
        raise ValidationError(m.SKILL_TOO_LARGE.format(n=size, max=m.MAX_SKILL_BYTES))


def validate_id(skill_id: str) -> None:
    """Deprecated: :func:`validate_skill_id` (the Go and Node name); removed in the next release."""
    _deprecated("validate_id", "validate_skill_id")
    validate_skill_id(skill_id)


def validate_skill(skill_id: str, markdown: str) -> None:
    """Deprecated: :func:`validate_skill_id`, then :func:`validate_skill_body`; removed in the next release."""
    _deprecated("validate_skill", "validate_skill_id and validate_skill_body")
    validate_skill_id(skill_id)
    validate_skill_body(markdown)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"iii_skills.{old} is deprecated and removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=3,
    )


def is_internal_function(function_id: str) -> bool:
    """Whether the registry refuses ``function_id`` behind a section URI or a prompt."""
    return function_id.startswith(m.HIDDEN_PREFIXES)


def section_uri(path: str) -> str:
    """The section URI of ``path`` (``a/b/c`` → ``iii://fn/a/b/c``), validated."""
    validate_section_path(path)
    return "iii://fn/" + path


def section_function_id(path: str) -> str:
    """The function id behind a section path (``a/b/c`` → ``a::b::c``), validated."""
    validate_section_path(path)
    return path.replace("/", "::")


def function_id_for_section(path: str) -> str:
    """Deprecated: :func:`section_function_id` (the Go and Node name); removed in the next release."""
    _deprecated("validation.function_id_for_section", "section_function_id")
    return section_function_id(path)


def validate_section_path(path: str) -> None:
    """A section path (``a/b/c``, the part of ``iii://fn/a/b/c`` after ``fn/``).

    Every ``/``-separated segment must pass the segment rule (so an empty
    path, or a leading, trailing or doubled ``/``, fails with ``segment must
    be non-empty``), and the function id it maps to may not be in an
    internal namespace.
    """
    segments = path.split("/")
    for segment in segments:
        error = _segment_error(segment)
        if error is not None:
            raise ValidationError(
                m.URI_SECTION_SEGMENT.format(segment=debug_quote(segment), error=error)
            )
    function_id = "::".join(segments)
    if is_internal_function(function_id):
        raise ValidationError(m.HIDDEN_SECTION.format(function_id=function_id))


def validate_prompt_name(name: str) -> None:
    """A prompt name: non-empty, ≤ 64 bytes, only ``[a-z0-9_-]``."""
    if name == "":
        raise ValidationError(m.NAME_EMPTY)
    if _byte_len(name) > m.MAX_NAME_LEN:
        raise ValidationError(m.NAME_TOO_LONG.format(n=_byte_len(name), max=m.MAX_NAME_LEN))
    if not _valid_chars(name):
        raise ValidationError(m.NAME_CHARS.format(name=debug_quote(name)))


def validate_argument_names(names: Iterable[str]) -> None:
    """Argument names in list order: non-empty after trimming, no exact duplicates."""
    seen: set[str] = set()
    for name in names:
        if _rust_trim(name) == "":
            raise ValidationError(m.ARGUMENT_NAME_EMPTY)
        if name in seen:
            raise ValidationError(m.ARGUMENT_DUPLICATE.format(name=name))
        seen.add(name)


def validate_prompt(
    name: str, description: str, function_id: str, argument_names: Iterable[str]
) -> None:
    """What ``prompts::register`` checks, in its order, plus the handler-namespace
    check the registry only makes at dispatch time (so it fails here, early)."""
    validate_prompt_name(name)
    if _rust_trim(description) == "":
        raise ValidationError(m.DESCRIPTION_EMPTY)
    if _rust_trim(function_id) == "":
        raise ValidationError(m.FUNCTION_ID_EMPTY)
    validate_argument_names(argument_names)
    if is_internal_function(function_id):
        raise ValidationError(m.HIDDEN_PROMPT.format(function_id=function_id))
