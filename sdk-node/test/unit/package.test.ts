// The built package (npm run build): ESM and CJS entry points export the same API, and the
// version constant matches package.json.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import { VERSION } from '../../src/version.js'

const root = new URL('../../', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string }

describe('package', () => {
  it('VERSION equals package.json version', () => {
    assert.equal(VERSION, pkg.version)
  })

  it('ships ESM and CJS builds with the same exports', async () => {
    const esm = (await import(new URL('dist/index.js', root).href)) as Record<string, unknown>
    const cjs = createRequire(import.meta.url)('../../dist/index.cjs') as Record<string, unknown>
    assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).sort())
    for (const name of ['createPublisher', 'Publisher', 'ValidationError', 'DEFAULT_BACKOFF', 'VERSION']) {
      assert.ok(name in esm, `ESM build exports ${name}`)
    }
    assert.equal(typeof esm['createPublisher'], 'function')
    assert.equal(cjs['VERSION'], pkg.version)
  })
})
