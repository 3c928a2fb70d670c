// The README's program is copy-and-run code: it is run as written (saved as publish.mjs) against
// a real registry, and with a malformed III_URL, which must fail at once.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { IIIClient } from 'iii-sdk'
import { Program, RegistryServer, repoRoot, sdkRoot, testClient } from '../helpers/server.js'

/** The README's first ```js block that builds a client: the program a user copies. */
function readmeProgram(): string {
  const readme = readFileSync(join(sdkRoot, 'README.md'), 'utf8')
  for (const block of readme.split('```js\n').slice(1)) {
    const code = block.split('```')[0] ?? ''
    if (code.includes('registerWorker(')) return code
  }
  throw new Error('sdk-node/README.md has no ```js block with the program')
}

describe('README program', () => {
  let server: RegistryServer
  let probe: IIIClient
  let dir: string

  before(async () => {
    // The example's node_modules has iii-skills (this package, built), iii-sdk and zod.
    const modules = join(repoRoot, 'examples', 'node', 'node_modules')
    if (!existsSync(join(modules, 'iii-skills'))) {
      throw new Error(`${modules} has no iii-skills: run \`make node-deps node-build\` first`)
    }
    dir = mkdtempSync(join(tmpdir(), 'iii-skills-readme-'))
    symlinkSync(modules, join(dir, 'node_modules'), 'dir')
    writeFileSync(join(dir, 'publish.mjs'), readmeProgram())
    server = await RegistryServer.start()
    probe = testClient(server.url, 'probe')
  })

  after(async () => {
    await probe?.shutdown()
    await server?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('publishes, and unregisters on SIGTERM', async () => {
    const program = new Program('publish.mjs', dir, server.url)
    try {
      await program.waitFor('published resend', 'the README program did not publish')
      const { skills } = await probe.trigger<unknown, { skills: { id: string }[] }>({
        function_id: 'skills::list',
        payload: {},
        timeoutMs: 5000,
      })
      const ids = skills.map((s) => s.id)
      for (const id of ['resend', 'resend/email', 'resend/email/send']) assert.ok(ids.includes(id), `${id} in ${ids.join(', ')}`)
      assert.equal(await program.stop(), 0, program.output)
      const left = await probe.trigger<unknown, { skills: { id: string }[] }>({
        function_id: 'skills::list',
        payload: {},
        timeoutMs: 5000,
      })
      assert.ok(!left.skills.some((s) => s.id.startsWith('resend')), 'SIGTERM unregistered the skills')
    } finally {
      program.kill()
    }
  })

  it('fails at once with a malformed III_URL, naming it', () => {
    const run = spawnSync(process.execPath, ['publish.mjs'], {
      cwd: dir,
      env: { ...process.env, III_URL: 'localhost:49134', OTEL_ENABLED: 'false' },
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(run.error, undefined, 'the program did not end by itself')
    assert.notEqual(run.status, 0)
    assert.match(run.stderr, /invalid engine URL "localhost:49134" \(from III_URL\): it has no scheme/)
  })
})
