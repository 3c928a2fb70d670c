import { z } from 'zod'
import { msg } from './messages.js'
import type { PromptArgument } from './validation.js'

/** The JSON type of a prompt argument, as far as argument checking is concerned. */
export type ArgumentKind = 'string' | 'integer' | 'number' | 'boolean'

/** A prompt argument derived from a zod object: what `prompts::register` gets, plus its type. */
export interface ArgumentSpec extends PromptArgument {
  kind: ArgumentKind
}

/** Any zod object schema, the shape prompt arguments are declared with. */
export type ArgsSchema = z.ZodObject

const TYPE_WORD: Record<ArgumentKind, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
}

type JsonSchemaNode = {
  type?: unknown
  enum?: unknown
  const?: unknown
  description?: unknown
  properties?: Record<string, JsonSchemaNode>
  required?: unknown
}

/**
 * Derives the argument list of a prompt from its zod object: one argument per key, in
 * declaration order; `description` from `.describe()`; `required` unless the field accepts
 * a missing value (`.optional()`, `.default()`). The type comes from the field's JSON Schema
 * on the input side, so `z.string()`, `z.enum([...])`, `z.literal('x')`, `z.int()`,
 * `z.number()`, `z.boolean()` (and wrappers of them) are accepted; anything MCP cannot send
 * as a single string (objects, arrays, unions) is refused here, when the prompt is defined.
 */
export function deriveArguments(schema: ArgsSchema): ArgumentSpec[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode
  const props = json.properties ?? {}
  const required = new Set(Array.isArray(json.required) ? (json.required as string[]) : [])
  const out: ArgumentSpec[] = []
  for (const name of Object.keys(schema.shape)) {
    const node = props[name] ?? {}
    const kind = kindOf(node)
    if (kind === undefined) {
      throw new TypeError(
        `prompt argument ${JSON.stringify(name)} has a type MCP cannot send as a string; ` +
          'use a string, enum, literal, integer, number or boolean schema',
      )
    }
    const spec: ArgumentSpec = { name, required: required.has(name), kind }
    if (typeof node.description === 'string') spec.description = node.description
    out.push(spec)
  }
  return out
}

function kindOf(node: JsonSchemaNode): ArgumentKind | undefined {
  const t = node.type
  if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return t
  if (t === undefined && Array.isArray(node.enum) && node.enum.every((v) => typeof v === 'string')) {
    return 'string'
  }
  if (t === undefined && typeof node.const === 'string') return 'string'
  return undefined
}

/** The wire form of the argument list for `prompts::register`. */
export function wireArguments(specs: readonly ArgumentSpec[]): PromptArgument[] {
  return specs.map((s) => {
    const a: PromptArgument = { name: s.name, required: s.required }
    if (s.description !== undefined) a.description = s.description
    return a
  })
}

const INTEGER_TEXT = /^[-+]?\d+$/
const NUMBER_TEXT = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/

/**
 * Converts one received value to its declared kind. MCP sends every argument as a string,
 * so a string that converts unambiguously is accepted next to the kind's own JSON type.
 */
function convert(kind: ArgumentKind, v: unknown): { ok: true; value: unknown } | { ok: false } {
  switch (kind) {
    case 'string':
      return typeof v === 'string' ? { ok: true, value: v } : { ok: false }
    case 'boolean':
      if (typeof v === 'boolean') return { ok: true, value: v }
      if (v === 'true') return { ok: true, value: true }
      if (v === 'false') return { ok: true, value: false }
      return { ok: false }
    case 'integer': {
      if (typeof v === 'number') return Number.isSafeInteger(v) ? { ok: true, value: v } : { ok: false }
      if (typeof v === 'string' && INTEGER_TEXT.test(v)) {
        const n = Number(v)
        return Number.isSafeInteger(n) ? { ok: true, value: n } : { ok: false }
      }
      return { ok: false }
    }
    case 'number': {
      if (typeof v === 'number') return Number.isFinite(v) ? { ok: true, value: v } : { ok: false }
      if (typeof v === 'string' && NUMBER_TEXT.test(v)) {
        const n = Number(v)
        return Number.isFinite(n) ? { ok: true, value: n } : { ok: false }
      }
      return { ok: false }
    }
  }
}

export type ArgumentCheck<T> = { ok: true; value: T } | { ok: false; message: string }

/**
 * Checks the arguments of one prompt call before its handler runs. Every problem is
 * collected and reported as one message (`prompt "x": problem; problem`). Keys that are not
 * declared (including the `_caller_worker_id` the engine adds) are ignored; a `null` value
 * counts as absent. After the type checks the zod schema itself runs, so refinements
 * (`.min()`, `.email()`, …) and defaults apply; its problems are reported per argument.
 */
export function checkArguments<S extends ArgsSchema>(
  prompt: string,
  specs: readonly ArgumentSpec[],
  schema: S,
  raw: unknown,
): ArgumentCheck<z.output<S>> {
  const prefix = msg.argPrefix(prompt)
  const input = raw === undefined || raw === null ? {} : raw
  if (typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, message: prefix + msg.argsNotObject(raw) }
  }
  const record = input as Record<string, unknown>
  const problems: string[] = []
  const converted: Record<string, unknown> = {}
  for (const spec of specs) {
    const v = Object.prototype.hasOwnProperty.call(record, spec.name) ? record[spec.name] : undefined
    if (v === undefined || v === null) {
      if (spec.required) problems.push(msg.argMissing(spec.name))
      continue
    }
    const c = convert(spec.kind, v)
    if (c.ok) converted[spec.name] = c.value
    else problems.push(msg.argType(spec.name, TYPE_WORD[spec.kind], v))
  }
  if (problems.length > 0) return { ok: false, message: prefix + problems.join('; ') }

  const parsed = schema.safeParse(converted)
  if (parsed.success) return { ok: true, value: parsed.data }
  for (const issue of parsed.error.issues) {
    const arg = issue.path.length > 0 ? String(issue.path[0]) : ''
    problems.push(arg === '' ? issue.message : msg.argInvalid(arg, issue.message))
  }
  return { ok: false, message: prefix + problems.join('; ') }
}
