import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { z } from 'zod'
import { checkArguments, deriveArguments, wireArguments } from '../../src/arguments.js'

const SendEmail = z.object({
  to: z.string().describe('Recipient address'),
  subject: z.string().describe('Subject line'),
  urgent: z.boolean().optional().describe('Mark as urgent'),
})

describe('deriveArguments', () => {
  it('takes names, descriptions and required-ness from the zod object, in order', () => {
    assert.deepEqual(wireArguments(deriveArguments(SendEmail)), [
      { name: 'to', description: 'Recipient address', required: true },
      { name: 'subject', description: 'Subject line', required: true },
      { name: 'urgent', description: 'Mark as urgent', required: false },
    ])
  })

  it('finds a description on either side of .optional() and treats defaults as optional', () => {
    const specs = deriveArguments(
      z.object({
        a: z.string().describe('inner').optional(),
        b: z.string().optional().describe('outer'),
        c: z.int().default(3).describe('with default'),
        d: z.number(),
      }),
    )
    assert.deepEqual(specs, [
      { name: 'a', description: 'inner', required: false, kind: 'string' },
      { name: 'b', description: 'outer', required: false, kind: 'string' },
      { name: 'c', description: 'with default', required: false, kind: 'integer' },
      { name: 'd', required: true, kind: 'number' },
    ])
  })

  it('knows integers, numbers, booleans, enums and literals', () => {
    const kinds = deriveArguments(
      z.object({
        i: z.int(),
        j: z.number().int(),
        n: z.number(),
        b: z.boolean(),
        e: z.enum(['low', 'high']),
        l: z.literal('x'),
        s: z.string().email(),
      }),
    ).map((s) => s.kind)
    assert.deepEqual(kinds, ['integer', 'integer', 'number', 'boolean', 'string', 'string', 'string'])
  })

  it('refuses types MCP cannot send as one string', () => {
    assert.throws(() => deriveArguments(z.object({ tags: z.array(z.string()) })), /"tags" has a type/)
    assert.throws(() => deriveArguments(z.object({ o: z.object({ a: z.string() }) })), /"o" has a type/)
  })

  it('gives an empty list for an empty object', () => {
    assert.deepEqual(deriveArguments(z.object({})), [])
  })
})

describe('checkArguments', () => {
  const Count = z.object({ count: z.int(), ratio: z.number().optional(), loud: z.boolean().optional() })
  const countSpecs = deriveArguments(Count)
  const sendSpecs = deriveArguments(SendEmail)

  it('passes typed values through', () => {
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: 3, ratio: 0.5, loud: true }), {
      ok: true,
      value: { count: 3, ratio: 0.5, loud: true },
    })
  })

  it('converts MCP strings when unambiguous', () => {
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: '42', ratio: '2.5e1', loud: 'false' }), {
      ok: true,
      value: { count: 42, ratio: 25, loud: false },
    })
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: '-7' }), { ok: true, value: { count: -7 } })
  })

  it('reports a missing required argument', () => {
    assert.deepEqual(checkArguments('send-email', sendSpecs, SendEmail, { subject: 'hi' }), {
      ok: false,
      message: 'prompt "send-email": missing required argument "to"',
    })
  })

  it('reports a wrong type with the JSON value received', () => {
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: 'abc' }), {
      ok: false,
      message: 'prompt "c": argument "count" must be an integer, got "abc"',
    })
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: 1.5 }), {
      ok: false,
      message: 'prompt "c": argument "count" must be an integer, got 1.5',
    })
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: 1, ratio: 'x1', loud: 'yes' }), {
      ok: false,
      message:
        'prompt "c": argument "ratio" must be a number, got "x1"; argument "loud" must be a boolean, got "yes"',
    })
    assert.deepEqual(checkArguments('send-email', sendSpecs, SendEmail, { to: 5, subject: ['x'] }), {
      ok: false,
      message:
        'prompt "send-email": argument "to" must be a string, got 5; argument "subject" must be a string, got ["x"]',
    })
  })

  it('collects every problem, in declaration order, joined by "; "', () => {
    const r = checkArguments('send-email', sendSpecs, SendEmail, { urgent: 'maybe' })
    assert.deepEqual(r, {
      ok: false,
      message:
        'prompt "send-email": missing required argument "to"; missing required argument "subject"; argument "urgent" must be a boolean, got "maybe"',
    })
  })

  it('ignores unknown keys and the keys the engine adds', () => {
    assert.deepEqual(
      checkArguments('send-email', sendSpecs, SendEmail, {
        to: 'a@b.c',
        subject: 'Hi',
        extra: 1,
        _caller_worker_id: '6f1c0000-0000-0000-0000-000000000000',
      }),
      { ok: true, value: { to: 'a@b.c', subject: 'Hi' } },
    )
  })

  it('treats null and absent arguments alike', () => {
    assert.deepEqual(checkArguments('send-email', sendSpecs, SendEmail, null), {
      ok: false,
      message: 'prompt "send-email": missing required argument "to"; missing required argument "subject"',
    })
    assert.deepEqual(checkArguments('c', countSpecs, Count, { count: 1, ratio: null }), {
      ok: true,
      value: { count: 1 },
    })
  })

  it('refuses a payload that is not an object', () => {
    assert.deepEqual(checkArguments('c', countSpecs, Count, ['x']), {
      ok: false,
      message: 'prompt "c": arguments must be an object, got ["x"]',
    })
  })

  it('runs the zod refinements and defaults after conversion', () => {
    const Limited = z.object({ limit: z.int().min(1), mode: z.enum(['a', 'b']).default('a') })
    const specs = deriveArguments(Limited)
    assert.deepEqual(checkArguments('l', specs, Limited, { limit: '5' }), {
      ok: true,
      value: { limit: 5, mode: 'a' },
    })
    const r = checkArguments('l', specs, Limited, { limit: '0', mode: 'c' })
    assert.equal(r.ok, false)
    assert.match(!r.ok ? r.message : '', /^prompt "l": argument "limit": .+; argument "mode": .+/)
  })
})
