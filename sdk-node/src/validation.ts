import {
  MAX_ID_BYTES,
  MAX_NAME_BYTES,
  MAX_SEGMENT_BYTES,
  MAX_SKILL_BYTES,
  isInternalFunctionId,
  msg,
} from './messages.js'

/** A value the registry would refuse; `message` is the registry's own wording. */
export class ValidationError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ValidationError'
  }
}

const SEGMENT_CHARS = /^[a-z0-9_-]*$/

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8')
}

/** The registry's segment rule; returns the problem, or undefined when `s` is fine. */
export function segmentError(s: string): string | undefined {
  if (s.length === 0) return msg.segmentEmpty
  const n = byteLength(s)
  if (n > MAX_SEGMENT_BYTES) return msg.segmentTooLong(s, n)
  if (!SEGMENT_CHARS.test(s)) return msg.segmentChars(s)
  return undefined
}

/**
 * The registry's `validate_id` for skill ids (`a`, `a/b/c`): the message, or undefined.
 * @deprecated Use `validateSkillId`, which throws (the Go and Python validators' shape); removed in
 * the next release.
 */
export function skillIdError(id: string): string | undefined {
  if (id.length === 0) return msg.idEmpty
  if (id.startsWith('/') || id.endsWith('/')) return msg.idSlash(id)
  const n = byteLength(id)
  if (n > MAX_ID_BYTES) return msg.idTooLong(id, n)
  const segments = id.split('/')
  for (let i = 0; i < segments.length; i++) {
    const err = segmentError(segments[i] ?? '')
    if (err !== undefined) return msg.idSegment(i + 1, id, err)
  }
  if (segments[0] === 'fn') return msg.idFnReserved(id)
  return undefined
}

/**
 * The registry's body checks for `skills::register`: the message, or undefined.
 * @deprecated Use `validateSkillBody`, which throws; removed in the next release.
 */
export function skillBodyError(markdown: string): string | undefined {
  if (markdown.length === 0) return msg.skillEmpty
  const n = byteLength(markdown)
  if (n > MAX_SKILL_BYTES) return msg.skillTooLarge(n)
  return undefined
}

/**
 * Checks a section path (`a/b/c`, the part of `iii://fn/a/b/c` after `fn/`) and returns
 * the function id behind it (`a::b::c`).
 */
export function sectionFunctionId(path: string): string {
  for (const seg of path.split('/')) {
    const err = segmentError(seg)
    if (err !== undefined) throw new ValidationError(msg.sectionSegment(seg, err))
  }
  const fid = path.split('/').join('::')
  if (isInternalFunctionId(fid)) throw new ValidationError(msg.sectionInternal(fid))
  return fid
}

/** The registry's `validate_name` for prompt names. */
export function promptNameError(name: string): string | undefined {
  if (name.length === 0) return msg.nameEmpty
  const n = byteLength(name)
  if (n > MAX_NAME_BYTES) return msg.nameTooLong(n)
  if (!SEGMENT_CHARS.test(name)) return msg.nameChars(name)
  return undefined
}

/** One entry of the `arguments` list of `prompts::register`. */
export interface PromptArgument {
  name: string
  description?: string
  required: boolean
}

/**
 * The registry's checks for `prompts::register`, in its order, plus the handler-namespace rule:
 * the message, or undefined.
 * @deprecated Use `validatePrompt`, which throws; removed in the next release.
 */
export function promptError(
  name: string,
  description: string,
  functionId: string,
  args: readonly PromptArgument[],
): string | undefined {
  const nameErr = promptNameError(name)
  if (nameErr !== undefined) return nameErr
  if (description.trim().length === 0) return msg.descriptionEmpty
  if (functionId.trim().length === 0) return msg.functionIdEmpty
  const seen = new Set<string>()
  for (const a of args) {
    if (a.name.trim().length === 0) return msg.argumentNameEmpty
    if (seen.has(a.name)) return msg.argumentDuplicate(a.name)
    seen.add(a.name)
  }
  if (isInternalFunctionId(functionId)) return msg.promptInternal(functionId)
  return undefined
}

/** Throws a ValidationError carrying `err` when there is one. */
export function check(err: string | undefined): void {
  if (err !== undefined) throw new ValidationError(err)
}

/**
 * Checks a skill id (`a`, `a/b/c`) with the registry's rules; throws a ValidationError with the
 * registry's message.
 */
export function validateSkillId(id: string): void {
  check(skillIdError(id))
}

/** Checks a skill body (non-empty, at most 256 KiB); throws a ValidationError. */
export function validateSkillBody(markdown: string): void {
  check(skillBodyError(markdown))
}

/** Checks a prompt name (the registry's `validate_name`); throws a ValidationError. */
export function validatePromptName(name: string): void {
  check(promptNameError(name))
}

/**
 * Checks a prompt as `prompts::register` does, in its order, plus the rule that the handler may
 * not live in an internal namespace; throws a ValidationError.
 */
export function validatePrompt(
  name: string,
  description: string,
  functionId: string,
  args: readonly PromptArgument[],
): void {
  check(promptError(name, description, functionId, args))
}
