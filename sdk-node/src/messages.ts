// Every user-visible string of the publisher contract (docs/publishers.md) lives here, so the
// exact wording the registry and the other SDKs share is kept in one place.

/** Rust `{:?}` quoting of a string, as the registry prints it in its messages. */
export function rustQuote(s: string): string {
  let out = '"'
  let first = true
  for (const ch of s) {
    out += escapeChar(ch, first)
    first = false
  }
  return out + '"'
}

function escapeChar(ch: string, first: boolean): string {
  switch (ch) {
    case '"':
      return '\\"'
    case '\\':
      return '\\\\'
    case '\n':
      return '\\n'
    case '\r':
      return '\\r'
    case '\t':
      return '\\t'
    case '\0':
      return '\\0'
    default:
      break
  }
  // Rust escapes what it does not consider printable (controls, format characters,
  // separators other than the ASCII space, unassigned) and a leading grapheme extender.
  if ((ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch)) || (first && /[\p{Mn}\p{Me}]/u.test(ch))) {
    return `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`
  }
  return ch
}

/**
 * The error code the registry refuses bad input with (a payload that does not decode, a value
 * its rules refuse): the same call is refused again, so it is never retried.
 */
export const CODE_INVALID_ARGUMENTS = 'INVALID_ARGUMENTS'

/**
 * The error code of the registry's answer that it does not hold what was asked (an unknown
 * skill, prompt, version or label), under upstream's message text ("Skill not found: a/b").
 */
export const CODE_NOT_FOUND = 'NOT_FOUND'

/**
 * The error code the registry refuses an id outside the namespaces of the publisher's scoped
 * token with. The token's namespaces do not change, so it is never retried. (An id another
 * connection holds is FORBIDDEN, which is retried: it passes to this publisher once that
 * connection is gone.)
 */
export const CODE_OUT_OF_SCOPE = 'OUT_OF_SCOPE'

/**
 * The error code the registry refuses an id with while another worker's connection holds it
 * (`… belongs to another worker (<id>, named "<name>") …`). It clears up when that worker goes,
 * so it is retried until the registration deadline.
 */
export const CODE_FORBIDDEN = 'FORBIDDEN'

/**
 * The error codes of a signature the registry does not take (docs/trust.md): UNSIGNED (none, or
 * one by a key allowed_signers does not trust for the id's namespace, where signatures are
 * required) and BAD_SIGNATURE (one that does not verify). Neither changes by retrying.
 */
export const CODE_UNSIGNED = 'UNSIGNED'
export const CODE_BAD_SIGNATURE = 'BAD_SIGNATURE'

export const MAX_ID_BYTES = 1024
export const MAX_SEGMENT_BYTES = 64
export const MAX_NAME_BYTES = 64
export const MAX_SKILL_BYTES = 262144

export const msg = {
  // skill ids (the registry's validate_id / validate_id_segment)
  idEmpty: 'id must be non-empty',
  idSlash: (id: string) => `id may not have a leading or trailing '/': ${rustQuote(id)}`,
  idTooLong: (id: string, n: number) =>
    `id too long (${n} chars; max ${MAX_ID_BYTES}): ${rustQuote(id)}`,
  idSegment: (i: number, id: string, err: string) =>
    `invalid id (segment ${i} of ${rustQuote(id)}): ${err}`,
  idFnReserved: (id: string) =>
    `id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): ${rustQuote(id)}`,
  segmentEmpty: 'segment must be non-empty',
  segmentTooLong: (s: string, n: number) =>
    `segment too long (${n} chars; max ${MAX_SEGMENT_BYTES}): ${rustQuote(s)}`,
  segmentChars: (s: string) =>
    `segment may only contain lowercase ASCII letters, digits, '-' and '_': ${rustQuote(s)}`,

  // skill bodies
  skillEmpty: 'skill must be non-empty',
  skillTooLarge: (n: number) => `skill body too large (${n} bytes; max ${MAX_SKILL_BYTES})`,

  // section paths (the registry's iii://fn/ URI parser and recursion guard)
  sectionSegment: (seg: string, err: string) =>
    `invalid section URI segment ${rustQuote(seg)}: ${err}`,
  sectionInternal: (fid: string) =>
    `Function '${fid}' is in an internal namespace and cannot back a skill resource`,

  // prompts (the registry's validate_name / prompts::register checks)
  nameEmpty: 'name must be non-empty',
  nameTooLong: (n: number) => `name too long (${n} chars; max ${MAX_NAME_BYTES})`,
  nameChars: (name: string) =>
    `name may only contain lowercase ASCII letters, digits, '-' and '_': ${rustQuote(name)}`,
  descriptionEmpty: 'description must be non-empty',
  functionIdEmpty: 'function_id must be non-empty',
  argumentNameEmpty: 'argument name must be non-empty',
  argumentDuplicate: (name: string) => `duplicate argument name: ${name}`,
  promptInternal: (fid: string) =>
    `Prompt handler '${fid}' is in an internal namespace and cannot back a prompt`,

  // prompt arguments at call time
  argPrefix: (prompt: string) => `prompt ${JSON.stringify(prompt)}: `,
  argMissing: (arg: string) => `missing required argument ${JSON.stringify(arg)}`,
  argType: (arg: string, word: string, got: unknown) =>
    `argument ${JSON.stringify(arg)} must be ${word}, got ${showJson(got)}`,
  argInvalid: (arg: string, detail: string) => `argument ${JSON.stringify(arg)}: ${detail}`,
  argsNotObject: (got: unknown) => `arguments must be an object, got ${showJson(got)}`,

  // boot-time registration
  gaveUp: 'skills handshake gave up; install / start it and restart this worker',
} as const

/** The JSON text of a received value, as shown after `got` in argument errors. */
export function showJson(v: unknown): string {
  if (v === undefined) return 'undefined'
  try {
    return JSON.stringify(v) ?? String(v)
  } catch {
    return String(v)
  }
}

/**
 * Function-id prefixes the registry refuses to serve (its recursion guard / hard floor):
 * a section or prompt handler in one of these namespaces can never be reached.
 */
export const INTERNAL_PREFIXES = [
  'engine::',
  'state::',
  'stream::',
  'iii.',
  'iii::',
  'mcp::',
  'a2a::',
  'skills::',
  'prompts::',
] as const

export function isInternalFunctionId(fid: string): boolean {
  return INTERNAL_PREFIXES.some((p) => fid.startsWith(p))
}
