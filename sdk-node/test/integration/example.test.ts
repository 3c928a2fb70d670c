// examples/node (the resend publisher) run as a user would: `III_URL=… node index.js`.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { IIIClient } from 'iii-sdk'
import { Program, RegistryServer, repoRoot, testClient } from '../helpers/server.js'

const exampleDir = join(repoRoot, 'examples', 'node')

async function call<T>(iii: IIIClient, function_id: string, payload: unknown = {}): Promise<T> {
  return iii.trigger<unknown, T>({ function_id, payload, timeoutMs: 5000 })
}

describe('examples/node', () => {
  let server: RegistryServer
  let probe: IIIClient

  before(async () => {
    if (!existsSync(join(exampleDir, 'node_modules', 'iii-skills'))) {
      throw new Error(`${exampleDir} has no node_modules: run \`make node-deps\` (npm ci) first`)
    }
    server = await RegistryServer.start()
    probe = testClient(server.url, 'probe')
  })

  after(async () => {
    await probe?.shutdown()
    await server?.dispose()
  })

  it('publishes the resend tree, a live health section and /send-email-node, and cleans up on SIGTERM', async () => {
    const program = new Program('index.js', exampleDir, server.url)
    try {
      await program.waitFor('/send-email-node are registered', 'the example did not report registration')
      const { skills } = await call<{ skills: { id: string }[] }>(probe, 'skills::list')
      assert.deepEqual(
        skills.map((s) => s.id).filter((id) => id === 'resend-node' || id.startsWith('resend-node/')),
        ['resend-node', 'resend-node/email', 'resend-node/email/send', 'resend-node/email/track'],
      )

      const tree = await call<string>(probe, 'skill::fetch', {
        uris: ['iii://resend-node', 'iii://resend-node/email/send', 'iii://fn/resend-node/health'],
      })
      assert.match(tree, /^# iii:\/\/resend-node\n\n# resend-node\n\nEmail provider integration\./)
      assert.match(tree, /# resend-node\/email\/send\n\nSending one outbound email through Resend\./)
      assert.match(tree, /# Resend health\n\nAPI: ok\. Worker up \d+s; this is health check #1, /)
      const again = await call<string>(probe, 'skill::fetch', { uri: 'iii://fn/resend-node/health' })
      assert.match(again, /health check #2, /, 'the section is live: each read calls the function')

      const { prompts } = await call<{ prompts: { name: string; arguments: unknown[] }[] }>(probe, 'prompts::mcp-list')
      assert.deepEqual(prompts.find((p) => p.name === 'send-email-node')?.arguments, [
        { name: 'to', description: 'Recipient address', required: true },
        { name: 'subject', description: 'Subject line', required: true },
      ])
      const got = await call<{ messages: { content: { text: string } }[] }>(probe, 'prompts::mcp-get', {
        name: 'send-email-node',
        arguments: { to: 'ada@example.com', subject: 'Launch' },
      })
      assert.equal(
        got.messages[0]?.content.text,
        'Compose an email to ada@example.com with the subject "Launch". Be concise and friendly.',
      )

      assert.equal(await program.stop(), 0, program.output)
      const left = await call<{ skills: { id: string }[] }>(probe, 'skills::list')
      assert.ok(!left.skills.some((s) => s.id.startsWith('resend-node')), 'SIGTERM unregistered the skills')
    } finally {
      program.kill()
    }
  })
})
