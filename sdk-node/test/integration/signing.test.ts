// Signed versions against the real registry: bin/skills --standalone with signing.require_signed,
// trusting a key ssh-keygen made. The publisher's signatures are accepted and recorded with the
// signer; after the engine restarts with empty state everything is registered again, signed; a
// publisher without a key is refused UNSIGNED, not retried.
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { IIIClient } from 'iii-sdk'
import { z } from 'zod'
import { createPublisher, type History } from '../../src/index.js'
import { MemoryLogger } from '../helpers/mock-client.js'
import { RegistryServer, eventually, freePort, testClient } from '../helpers/server.js'

const keygenFound = spawnSync('ssh-keygen', ['-?']).error === undefined
const skip = keygenFound ? false : 'not run: ssh-keygen not found (Debian package openssh-client)'

describe('signed versions against a registry that requires signatures', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'iii-skills-node-signing-'))
  const clients: IIIClient[] = []
  const servers: RegistryServer[] = []
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    for (const s of servers) await s.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('registers signed skills and prompts, again after an engine restart; unsigned ones are refused', async () => {
    const key = join(dir, 'alice')
    execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-b', '256', '-N', '', '-C', 'alice', '-f', key])
    const [kt, b64] = readFileSync(`${key}.pub`, 'utf8').split(/\s+/)
    writeFileSync(join(dir, 'allowed_signers'), `alice@example.com ${kt} ${b64}\n`)
    const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key}.pub`], { encoding: 'utf8' }).split(/\s+/)[1]
    const config = join(dir, 'config.yaml')
    writeFileSync(config, `signing:\n  allowed_signers: ${join(dir, 'allowed_signers')}\n  require_signed: ["*"]\n`)
    const port = await freePort()
    const server = await RegistryServer.start(port, config)
    servers.push(server)

    const iii = testClient(server.url, 'signing-publisher')
    clients.push(iii)
    const publisher = createPublisher(iii, {
      logger: new MemoryLogger(),
      signingKey: key,
      backoff: { initialMs: 50, multiplier: 2, maxMs: 200, giveUpMs: 60_000 },
    })
    let rounds = 0
    publisher.on('registered', () => rounds++)
    publisher.skill('acme/signed', '# Signed\n')
    publisher.prompt({ name: 'acme-signed', description: 'A signed prompt', args: z.object({ topic: z.string().describe('What about') }) }, () => 'x')
    assert.deepEqual(await publisher.start(), { registered: true, rejected: [] })

    const check = async (): Promise<void> => {
      const skill: History = await publisher.skillVersions('acme/signed')
      assert.equal(skill.versions[0]?.signed_by, 'alice@example.com')
      assert.equal(skill.versions[0]?.key, fingerprint)
      const prompt: History = await publisher.promptVersions('acme-signed')
      assert.equal(prompt.versions[0]?.signed_by, 'alice@example.com')
      assert.equal(
        prompt.versions[0]?.definition,
        '{"arguments":[{"description":"What about","name":"topic","required":true}],"description":"A signed prompt","function_id":"prompt::acme-signed"}',
      )
    }
    await check()

    // The engine comes back with empty state: registered again, signed.
    await server.stop()
    await server.spawn()
    await eventually(() => rounds >= 2, () => `not registered again after the restart:\n${server.log()}`, 60_000)
    await check()

    const unsignedClient = testClient(server.url, 'unsigned-publisher')
    clients.push(unsignedClient)
    const unsigned = createPublisher(unsignedClient, { logger: new MemoryLogger() })
    unsigned.skill('acme/unsigned', '# Unsigned\n')
    const result = await unsigned.start()
    assert.equal(result.registered, false)
    assert.equal(result.rejected.length, 1)
    const r = result.rejected[0]
    assert.equal(r?.code, 'UNSIGNED')
    assert.equal(r?.retried, false)
    assert.match(r?.message ?? '', /namespace "\*" requires a signature/)
    assert.match(r?.advice ?? '', /^sign it with a key the registry's allowed_signers trusts/)
    await unsigned.close()
    await publisher.close()
  })
})
