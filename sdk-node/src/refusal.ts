// How the publisher reads a refused skills::register / prompts::register (docs/publishers.md,
// "Refusals"). The Go and Python publishers read it the same way, with the same advice and log
// lines (conformance/vectors/refusals.json).
import { errorMessage } from './logger.js'
import {
  CODE_BAD_SIGNATURE,
  CODE_FORBIDDEN,
  CODE_INVALID_ARGUMENTS,
  CODE_OUT_OF_SCOPE,
  CODE_UNSIGNED,
} from './messages.js'

/** The worker that holds an id this publisher was refused (`FORBIDDEN`), as the registry names it. */
export interface Holder {
  /** The engine's id of the worker's connection. */
  workerId: string
  /** The name that worker gave the engine, as the registry's web page shows it; absent when not named. */
  workerName?: string
}

/** One skill or prompt the registry refused, with advice that fits the refusal's code. */
export interface Rejection {
  /** `skill:<id>` / `prompt:<name>`. */
  key: string
  /** For log lines: `skill "resend"`. */
  label: string
  kind: 'skill' | 'prompt'
  /** The skill's id or the prompt's name. */
  name: string
  /** The registry's error code (`''` when it sent none). */
  code: string
  /** The registry's message. */
  message: string
  /** The worker that holds the id (`FORBIDDEN`), when the registry names it. */
  holder?: Holder
  /** What to do about it. */
  advice: string
  /**
   * Whether the publisher keeps trying it: another worker holds the id (`FORBIDDEN`), which clears
   * up when that worker goes. Validation refusals and ids outside the token's namespaces are not.
   */
  retried: boolean
}

// Messages of the registry's own validation (and of payload decoding): a call refused with
// one of these will be refused again, so it is reported and never retried. Our registry says
// so with code INVALID_ARGUMENTS; the messages are the fallback for an upstream registry, which
// answers every failure with invocation_failed.
const PERMANENT = [
  /\bid must be non-empty\b/,
  /\bid may not have\b/,
  /\bid too long\b/,
  /\binvalid id \(segment\b/,
  /\bskill must be non-empty\b/,
  /\bskill body too large\b/,
  /\bname must be non-empty\b/,
  /\bname too long\b/,
  /\bname may only contain\b/,
  /\bdescription must be non-empty\b/,
  /\bfunction_id must be non-empty\b/,
  /\bargument name must be non-empty\b/,
  /\bduplicate argument name\b/,
  /\bmissing field\b/,
  /\binvalid type\b/,
]

/** The engine's code for a request its function's request_format refuses. */
const CODE_INVALID_REQUEST = 'invalid_request'

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

/**
 * Whether the registry will refuse the same call again: bad input (INVALID_ARGUMENTS, or one of
 * the validation messages from a registry that sends no code) or an id outside the namespaces
 * of the publisher's scoped token (OUT_OF_SCOPE), or a signature the registry does not take
 * (UNSIGNED, BAD_SIGNATURE). FORBIDDEN (another connection holds the id)
 * is not: it clears up when that connection goes.
 */
export function isPermanentError(err: unknown): boolean {
  const code = codeOf(err)
  if ([CODE_INVALID_ARGUMENTS, CODE_OUT_OF_SCOPE, CODE_INVALID_REQUEST, CODE_UNSIGNED, CODE_BAD_SIGNATURE].includes(code)) {
    return true
  }
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : ''
  return PERMANENT.some((re) => re.test(message))
}

// How the registry names the holder of an id: `belongs to another worker (<id>)` or
// `(<id>, named "<name>")`, the name a JSON string.
const HOLDER = /belongs to another worker \(([^,()\s]+)(?:, named ("(?:[^"\\]|\\.)*"))?\)/

/** The holder named in a FORBIDDEN message; undefined when the text names none. */
export function holderOf(message: string): Holder | undefined {
  const m = HOLDER.exec(message)
  if (m === null || m[1] === undefined) return undefined
  const holder: Holder = { workerId: m[1] }
  if (m[2] !== undefined) {
    try {
      const name: unknown = JSON.parse(m[2])
      if (typeof name === 'string') holder.workerName = name
    } catch {
      // Not a JSON string: the id alone.
    }
  }
  return holder
}

function holderText(h: Holder): string {
  return h.workerName === undefined ? `worker ${h.workerId}` : `worker ${JSON.stringify(h.workerName)} (${h.workerId})`
}

const UNSIGNED_ADVICE =
  "sign it with a key the registry's allowed_signers trusts for this namespace (the publisher's signing key), " +
  'or have the operator trust this key; then restart this worker (not retried)'
const BAD_SIGNATURE_ADVICE =
  "sign the exact bytes registered (a skill's body, a prompt's canonical JSON) for namespace iii-skills, " +
  'or send no signature; then restart this worker (not retried)'

/** An item the publisher registers: `skill` id or `prompt` name. */
export interface RefusedItem {
  key: string
  label: string
  kind: 'skill' | 'prompt'
  name: string
}

/**
 * Reads a failed register call of `item`: a Rejection when the registry refused this item
 * (permanently, or because another worker holds the id), undefined when the failure is not
 * about the item (the registry is absent or did not answer).
 */
export function refusalOf(item: RefusedItem, err: unknown): Rejection | undefined {
  const code = codeOf(err)
  const message = errorMessage(err)
  let advice: string
  let holder: Holder | undefined
  if (code === CODE_FORBIDDEN) {
    holder = holderOf(message)
    const who = holder === undefined ? 'the worker that holds it' : `${holderText(holder)}, which holds it`
    const what = item.kind === 'prompt' ? 'name' : 'id'
    advice = `stop ${who}, or publish under another ${what}; this worker retries until its registration deadline`
  } else if (code === CODE_OUT_OF_SCOPE) {
    advice =
      "publish it under a namespace of this worker's token, or give the worker a token whose namespaces cover it (not retried)"
  } else if (code === CODE_UNSIGNED) {
    advice = UNSIGNED_ADVICE
  } else if (code === CODE_BAD_SIGNATURE) {
    advice = BAD_SIGNATURE_ADVICE
  } else if (isPermanentError(err)) {
    advice = `fix the ${item.kind} and restart this worker (not retried)`
  } else {
    return undefined
  }
  const r: Rejection = {
    key: item.key,
    label: item.label,
    kind: item.kind,
    name: item.name,
    code,
    message,
    advice,
    retried: code === CODE_FORBIDDEN,
  }
  if (holder !== undefined) r.holder = holder
  return r
}

/** The line a refusal is logged as (error level, or warning for a held id). */
export function rejectionLine(r: Rejection): string {
  const code = r.code === '' ? '' : ` (${r.code})`
  return `skills registry refused ${r.kind} ${JSON.stringify(r.name)}${code}: ${r.message}; ${r.advice}`
}

/**
 * The warning logged instead of the handshake message when the registration deadline passes while
 * every missing item is held by another worker: the registry runs, so "install / start it" would
 * mislead.
 */
export function gaveUpHeldMessage(held: readonly Pick<Rejection, 'kind' | 'name'>[]): string {
  const items = held.map((r) => `${r.kind} ${JSON.stringify(r.name)}`).join(', ')
  return `skills registration gave up while other workers hold ${items}; stop them or publish under other ids, then restart this worker`
}
