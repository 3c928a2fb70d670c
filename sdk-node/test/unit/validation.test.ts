import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { rustQuote } from '../../src/messages.js'
import {
  ValidationError,
  promptError,
  sectionFunctionId,
  skillBodyError,
  skillIdError,
} from '../../src/validation.js'

describe('rustQuote (the registry quotes with Rust {:?})', () => {
  it('quotes and escapes like Rust', () => {
    assert.equal(rustQuote('x/'), '"x/"')
    assert.equal(rustQuote('a"b\\c'), '"a\\"b\\\\c"')
    assert.equal(rustQuote('a\nb\tc\r'), '"a\\nb\\tc\\r"')
    assert.equal(rustQuote('\u0001'), '"\\u{1}"')
    assert.equal(rustQuote('\u00a0'), '"\\u{a0}"')
    assert.equal(rustQuote('héllo wörld'), '"héllo wörld"')
    assert.equal(rustQuote("it's"), '"it\'s"')
  })
})

describe('skill ids (validate_id)', () => {
  const cases: [string, string | undefined][] = [
    ['resend', undefined],
    ['resend/email/send', undefined],
    ['docs/fn-reference', undefined],
    ['a/fn', undefined],
    ['', 'id must be non-empty'],
    ['x/', `id may not have a leading or trailing '/': "x/"`],
    ['/x', `id may not have a leading or trailing '/': "/x"`],
    ['a//b', 'invalid id (segment 2 of "a//b"): segment must be non-empty'],
    [
      'Resend',
      `invalid id (segment 1 of "Resend"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Resend"`,
    ],
    [
      'a/b::c',
      `invalid id (segment 2 of "a/b::c"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "b::c"`,
    ],
    [
      'fn',
      'id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn"',
    ],
    [
      'fn/x',
      'id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/x"',
    ],
  ]
  for (const [id, want] of cases) {
    it(`${JSON.stringify(id)} → ${want ?? 'ok'}`, () => assert.equal(skillIdError(id), want))
  }

  it('caps a segment at 64 bytes', () => {
    assert.equal(skillIdError('a'.repeat(64)), undefined)
    const long = 'a'.repeat(65)
    assert.equal(
      skillIdError(long),
      `invalid id (segment 1 of "${long}"): segment too long (65 chars; max 64): "${long}"`,
    )
  })

  it('caps the whole id at 1024 bytes', () => {
    const seg = 'a'.repeat(63)
    const ok = Array(16).fill(seg).join('/') // 16*63 + 15 = 1023
    assert.equal(skillIdError(ok), undefined)
    const long = `${ok}/ab`
    assert.equal(skillIdError(long), `id too long (1026 chars; max 1024): "${long}"`)
  })

  it('checks slashes before length, length before segments', () => {
    assert.match(skillIdError(`/${'A'.repeat(2000)}`) ?? '', /^id may not have a leading/)
    assert.match(skillIdError('A'.repeat(1025)) ?? '', /^id too long \(1025 chars/)
  })
})

describe('skill bodies', () => {
  it('refuses an empty body', () => assert.equal(skillBodyError(''), 'skill must be non-empty'))
  it('accepts whitespace', () => assert.equal(skillBodyError(' '), undefined))
  it('accepts exactly 256 KiB and refuses one byte more (counted in bytes)', () => {
    assert.equal(skillBodyError('a'.repeat(262144)), undefined)
    assert.equal(skillBodyError('a'.repeat(262145)), 'skill body too large (262145 bytes; max 262144)')
    assert.equal(skillBodyError('é'.repeat(131073)), 'skill body too large (262146 bytes; max 262144)')
  })
})

describe('section paths', () => {
  it('maps a/b/c to a::b::c', () => {
    assert.equal(sectionFunctionId('resend/health'), 'resend::health')
    assert.equal(sectionFunctionId('a/b/c/d'), 'a::b::c::d')
    assert.equal(sectionFunctionId('state'), 'state')
  })

  it('refuses a bad segment with the registry message', () => {
    assert.throws(
      () => sectionFunctionId('demo/Bad-Case'),
      new ValidationError(
        `invalid section URI segment "Bad-Case": segment may only contain lowercase ASCII letters, digits, '-' and '_': "Bad-Case"`,
      ),
    )
    assert.throws(
      () => sectionFunctionId('a//b'),
      new ValidationError('invalid section URI segment "": segment must be non-empty'),
    )
    assert.throws(
      () => sectionFunctionId('a b'),
      new ValidationError(
        `invalid section URI segment "a b": segment may only contain lowercase ASCII letters, digits, '-' and '_': "a b"`,
      ),
    )
  })

  it('refuses internal namespaces', () => {
    for (const [path, fid] of [
      ['state/set', 'state::set'],
      ['engine/x', 'engine::x'],
      ['skills/register', 'skills::register'],
      ['prompts/register', 'prompts::register'],
      ['mcp/handler', 'mcp::handler'],
      ['iii/x', 'iii::x'],
      ['a2a/x', 'a2a::x'],
      ['stream/x', 'stream::x'],
    ]) {
      assert.throws(
        () => sectionFunctionId(path as string),
        new ValidationError(
          `Function '${fid}' is in an internal namespace and cannot back a skill resource`,
        ),
      )
    }
  })
})

describe('prompts', () => {
  const args = [{ name: 'to', required: true }]
  it('accepts a well-formed prompt', () => {
    assert.equal(promptError('send-email', 'Compose', 'prompt::send-email', args), undefined)
    assert.equal(promptError('a_b-9', 'd', 'x', []), undefined)
  })
  it('checks the name', () => {
    assert.equal(promptError('', 'd', 'f', []), 'name must be non-empty')
    assert.equal(promptError('a'.repeat(65), 'd', 'f', []), 'name too long (65 chars; max 64)')
    assert.equal(
      promptError('Send Email', 'd', 'f', []),
      `name may only contain lowercase ASCII letters, digits, '-' and '_': "Send Email"`,
    )
    assert.equal(
      promptError('a::b', 'd', 'f', []),
      `name may only contain lowercase ASCII letters, digits, '-' and '_': "a::b"`,
    )
  })
  it('checks the description, handler id and arguments in the registry order', () => {
    assert.equal(promptError('p', '  ', 'f', []), 'description must be non-empty')
    assert.equal(promptError('p', 'd', ' ', []), 'function_id must be non-empty')
    assert.equal(promptError('p', 'd', 'f', [{ name: ' ', required: false }]), 'argument name must be non-empty')
    assert.equal(
      promptError('p', 'd', 'f', [
        { name: 'x', required: false },
        { name: 'x', required: true },
      ]),
      'duplicate argument name: x',
    )
  })
  it('refuses a handler in an internal namespace', () => {
    assert.equal(
      promptError('p', 'd', 'state::set', []),
      `Prompt handler 'state::set' is in an internal namespace and cannot back a prompt`,
    )
    assert.equal(promptError('p', 'd', 'skill::fetch', []), undefined)
  })
})
