// The engine-address rules shared with the Go and Python SDKs
// (conformance/vectors/engine_urls.json): the same cases, the same messages.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { DEFAULT_ENGINE_URL, engineUrl } from '../../src/engine-url.js'

interface Case {
  input: string
  env?: string
  url?: string
  error?: string
}

const cases = (
  JSON.parse(readFileSync(new URL('../../../conformance/vectors/engine_urls.json', import.meta.url), 'utf8')) as {
    engine_url: Case[]
  }
).engine_url

describe('engineUrl (shared vectors)', () => {
  it('has the shared cases', () => assert.ok(cases.length >= 20))
  for (const c of cases) {
    it(`${JSON.stringify(c.input)} with III_URL ${c.env === undefined ? 'unset' : JSON.stringify(c.env)}`, () => {
      const env: NodeJS.ProcessEnv = c.env === undefined ? {} : { III_URL: c.env }
      if (c.error !== undefined) {
        assert.throws(() => engineUrl(c.input, env), (err: unknown) => {
          assert.ok(err instanceof RangeError)
          assert.equal(err.message, c.error)
          return true
        })
      } else {
        assert.equal(engineUrl(c.input, env), c.url)
      }
    })
  }
  it('reads process.env by default', () => {
    const saved = process.env['III_URL']
    try {
      delete process.env['III_URL']
      assert.equal(engineUrl(), DEFAULT_ENGINE_URL)
      process.env['III_URL'] = 'ws://10.1.2.3:4'
      assert.equal(engineUrl(), 'ws://10.1.2.3:4')
    } finally {
      if (saved === undefined) delete process.env['III_URL']
      else process.env['III_URL'] = saved
    }
  })
})
