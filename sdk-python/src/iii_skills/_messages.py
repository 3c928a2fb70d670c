"""Every exact string this package produces that is part of the shared contract.

The registry's validation messages (``docs/publishers.md``, upstream skills
worker v0.2.2), the prompt-argument messages, the give-up warning and the
function ids of the registry live here and nowhere else. ``{…!r}``-style
quoting is never used for them: quoting is Rust's ``{:?}``, produced by
:func:`iii_skills.validation.debug_quote`.
"""

from __future__ import annotations

from typing import Final

# Skill ids (validate_id / validate_id_segment).
ID_EMPTY: Final = "id must be non-empty"
ID_EDGE_SLASH: Final = "id may not have a leading or trailing '/': {id}"
ID_TOO_LONG: Final = "id too long ({n} chars; max {max}): {id}"
ID_SEGMENT: Final = "invalid id (segment {i} of {id}): {error}"
ID_RESERVED: Final = (
    'id may not have "fn" as its first segment '
    "(reserved as the iii://fn/ section-URI marker): {id}"
)
SEGMENT_EMPTY: Final = "segment must be non-empty"
SEGMENT_TOO_LONG: Final = "segment too long ({n} chars; max {max}): {segment}"
SEGMENT_CHARS: Final = (
    "segment may only contain lowercase ASCII letters, digits, '-' and '_': {segment}"
)

# Skill bodies.
SKILL_EMPTY: Final = "skill must be non-empty"
SKILL_TOO_LARGE: Final = "skill body too large ({n} bytes; max {max})"

# Section paths (each segment of iii://fn/{path}).
URI_SECTION_SEGMENT: Final = "invalid section URI segment {segment}: {error}"
HIDDEN_SECTION: Final = (
    "Function '{function_id}' is in an internal namespace and cannot back a skill resource"
)

# Prompts (validate_name, description, function_id, validate_arguments).
NAME_EMPTY: Final = "name must be non-empty"
NAME_TOO_LONG: Final = "name too long ({n} chars; max {max})"
NAME_CHARS: Final = (
    "name may only contain lowercase ASCII letters, digits, '-' and '_': {name}"
)
DESCRIPTION_EMPTY: Final = "description must be non-empty"
FUNCTION_ID_EMPTY: Final = "function_id must be non-empty"
ARGUMENT_NAME_EMPTY: Final = "argument name must be non-empty"
ARGUMENT_DUPLICATE: Final = "duplicate argument name: {name}"
HIDDEN_PROMPT: Final = (
    "Prompt handler '{function_id}' is in an internal namespace and cannot back a prompt"
)

# Prompt arguments at call time (docs/publishers.md "Prompt arguments at call time").
# One message per call: the prefix once, then every problem joined by "; "
# (the Node and Go publishers spell it the same way).
PROMPT_PREFIX: Final = "prompt {name}: "
ARG_MISSING: Final = "missing required argument {arg}"
ARG_WRONG_TYPE: Final = "argument {arg} must be {type_word}, got {got}"
ARG_INVALID: Final = "argument {arg}: {reason}"
ARGS_NOT_OBJECT: Final = "arguments must be an object, got {got}"
PROBLEM_SEPARATOR: Final = "; "

# Prompt handler output (the registry's normalize_prompt_output).
PROMPT_UNSUPPORTED_SHAPE: Final = (
    "prompt handler returned unsupported shape; "
    "expected string, { content }, or { messages: [...] }"
)

# Boot-time registration.
GAVE_UP: Final = "skills handshake gave up; install / start it and restart this worker"

# Registry surface.
FN_SKILLS_REGISTER: Final = "skills::register"
FN_SKILLS_UNREGISTER: Final = "skills::unregister"
FN_PROMPTS_REGISTER: Final = "prompts::register"
FN_PROMPTS_UNREGISTER: Final = "prompts::unregister"
FN_SKILLS_VERSIONS: Final = "skills::versions"
FN_SKILLS_LABEL: Final = "skills::label"
FN_PROMPTS_VERSIONS: Final = "prompts::versions"
FN_PROMPTS_LABEL: Final = "prompts::label"
TRIGGER_SKILLS_ON_CHANGE: Final = "skills::on-change"
TRIGGER_PROMPTS_ON_CHANGE: Final = "prompts::on-change"
TRIGGER_FUNCTIONS_AVAILABLE: Final = "engine::functions-available"

# Namespaces the registry refuses behind section URIs and prompt handlers.
HIDDEN_PREFIXES: Final = (
    "engine::",
    "state::",
    "stream::",
    "iii.",
    "iii::",
    "mcp::",
    "a2a::",
    "skills::",
    "prompts::",
)

# The error code the registry refuses bad input with (a payload that does not
# decode, a value its rules refuse): a permanent failure that retrying cannot
# fix. The markers below are the fallback for an upstream registry, which
# answers every failure with ``invocation_failed``.
CODE_INVALID_ARGUMENTS: Final = "INVALID_ARGUMENTS"

# The error code of the registry's answer that it does not hold what was
# asked (an unknown skill, prompt, version or label), under upstream's message
# text ("Skill not found: a/b"). NOT_FOUND_PREFIXES are the fallback for an
# upstream registry, which answers every failure with ``invocation_failed``.
CODE_NOT_FOUND: Final = "NOT_FOUND"
NOT_FOUND_PREFIXES: Final = ("Skill not found: ", "Prompt not found: ")

# The error code the registry refuses an id outside the namespaces of the
# publisher's scoped token with. The token's namespaces do not change, so it
# is permanent. (An id another connection holds is ``FORBIDDEN``, which is
# retried: it passes to this publisher once that connection is gone.)
CODE_OUT_OF_SCOPE: Final = "OUT_OF_SCOPE"

# The error code the registry refuses an id with while another worker's
# connection holds it (``… belongs to another worker (<id>, named "<name>")
# …``). It clears up when that worker goes, so it is retried until the
# registration deadline.
CODE_FORBIDDEN: Final = "FORBIDDEN"

# The engine's code for a request its function's request_format refuses.
CODE_INVALID_REQUEST: Final = "invalid_request"

# The error codes of a signature the registry does not take (docs/trust.md):
# ``UNSIGNED`` (none, or one by a key allowed_signers does not trust for the
# id's namespace, where signatures are required) and ``BAD_SIGNATURE`` (one
# that does not verify). Neither changes by retrying.
CODE_UNSIGNED: Final = "UNSIGNED"
CODE_BAD_SIGNATURE: Final = "BAD_SIGNATURE"

# Refusals (docs/publishers.md "Refusals"; conformance/vectors/refusals.json).
REFUSAL_LINE: Final = "skills registry refused {kind} {name}{code}: {message}; {advice}"
ADVICE_HELD: Final = (
    "stop {holder}, or publish under another {what}; "
    "this worker retries until its registration deadline"
)
ADVICE_OUT_OF_SCOPE: Final = (
    "publish it under a namespace of this worker's token, "
    "or give the worker a token whose namespaces cover it (not retried)"
)
ADVICE_INVALID: Final = "fix the {kind} and restart this worker (not retried)"
ADVICE_UNSIGNED: Final = (
    "sign it with a key the registry's allowed_signers trusts for this namespace "
    "(the publisher's signing key), or have the operator trust this key; "
    "then restart this worker (not retried)"
)
ADVICE_BAD_SIGNATURE: Final = (
    "sign the exact bytes registered (a skill's body, a prompt's canonical JSON) "
    "for namespace iii-skills, or send no signature; then restart this worker (not retried)"
)
GAVE_UP_HELD: Final = (
    "skills registration gave up while other workers hold {items}; "
    "stop them or publish under other ids, then restart this worker"
)

# The engine address (docs/publishers.md "The engine address").
DEFAULT_ENGINE_URL: Final = "ws://127.0.0.1:49134"
ENGINE_URL_INVALID: Final = (
    "invalid engine URL {url}{source}: {why}; expected ws://host:port or wss://host:port"
)

# Substrings that mark a registry answer as a validation error: a permanent
# failure that retrying cannot fix.
PERMANENT_MARKERS: Final = (
    ID_EMPTY,
    "id may not have a leading or trailing '/'",
    "id too long (",
    "invalid id (segment ",
    'id may not have "fn" as its first segment',
    SKILL_EMPTY,
    "skill body too large (",
    NAME_EMPTY,
    "name too long (",
    "name may only contain lowercase ASCII letters",
    DESCRIPTION_EMPTY,
    FUNCTION_ID_EMPTY,
    ARGUMENT_NAME_EMPTY,
    "duplicate argument name: ",
    # the registry could not decode the payload (serde wording)
    "missing field `",
    "invalid type: ",
)

# Limits (every length is a UTF-8 byte count, as upstream).
MAX_SEGMENT_LEN: Final = 64
MAX_ID_LEN: Final = 1024
MAX_NAME_LEN: Final = 64
MAX_SKILL_BYTES: Final = 262144
