// The validation vectors shared with the Go and Python publishers
// (conformance/vectors/validation.json): the three copies of the registry's rules are checked
// against the same cases, so they cannot drift apart.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import {
  promptError,
  promptNameError,
  sectionFunctionId,
  skillBodyError,
  skillIdError,
} from '../../src/validation.js'

type Part = string | { repeat: string; times: number }
type VString = string | Part[]

interface Case<I> {
  input: I
  ok?: boolean
  error?: VString
  function_id?: string
}

interface PromptInput {
  name: string
  description: string
  function_id: string
  arguments: string[]
}

interface Vectors {
  skill_id: Case<VString>[]
  skill_body: Case<VString>[]
  section_path: Case<VString>[]
  prompt_name: Case<VString>[]
  prompt: Case<PromptInput>[]
}

const vectors = JSON.parse(
  readFileSync(new URL('../../../conformance/vectors/validation.json', import.meta.url), 'utf8'),
) as Vectors

/** A vector string: a string, or parts to concatenate ({repeat, times} repeats a string). */
function expand(v: VString): string {
  if (typeof v === 'string') return v
  return v.map((p) => (typeof p === 'string' ? p : p.repeat.repeat(p.times))).join('')
}

function want(c: Case<unknown>): string | undefined {
  return c.error === undefined ? undefined : expand(c.error)
}

function label(v: string): string {
  return v.length > 40 ? `${JSON.stringify(v.slice(0, 40))}… (${v.length} chars)` : JSON.stringify(v)
}

describe('shared validation vectors', () => {
  it('has every group', () => {
    for (const g of [vectors.skill_id, vectors.skill_body, vectors.section_path, vectors.prompt_name, vectors.prompt]) {
      assert.ok(g.length > 0)
    }
  })
  for (const c of vectors.skill_id) {
    const id = expand(c.input)
    it(`skill id ${label(id)}`, () => assert.equal(skillIdError(id), want(c)))
  }
  for (const c of vectors.skill_body) {
    const body = expand(c.input)
    it(`skill body ${label(body)}`, () => assert.equal(skillBodyError(body), want(c)))
  }
  for (const c of vectors.section_path) {
    const path = expand(c.input)
    it(`section path ${label(path)}`, () => {
      const expected = want(c)
      if (expected === undefined) assert.equal(sectionFunctionId(path), c.function_id)
      else assert.throws(() => sectionFunctionId(path), { message: expected })
    })
  }
  for (const c of vectors.prompt_name) {
    const name = expand(c.input)
    it(`prompt name ${label(name)}`, () => assert.equal(promptNameError(name), want(c)))
  }
  for (const c of vectors.prompt) {
    const p = c.input
    it(`prompt ${JSON.stringify(p)}`, () =>
      assert.equal(
        promptError(
          p.name,
          p.description,
          p.function_id,
          p.arguments.map((name) => ({ name, required: false })),
        ),
        want(c),
      ))
  }
})
