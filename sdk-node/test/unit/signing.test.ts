// Signing (docs/trust.md): every key type ssh-keygen makes signs what the publisher registers,
// and the real `ssh-keygen -Y verify` accepts each signature over the exact bytes the registry
// checks; key files the publisher cannot use are refused with the words Go and Python use
// (conformance/vectors/signing.json).
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { z } from 'zod'
import { canonicalPrompt, createPublisher } from '../../src/index.js'
import { keyMessage, SigningKey } from '../../src/signing.js'
import { MemoryLogger, MockClient, until } from '../helpers/mock-client.js'

interface Vectors {
  canonical_prompt: {
    description: string
    function_id: string
    arguments: { name: string; description?: string | null; required?: boolean }[]
    canonical: string
  }[]
  key_errors: { kind: 'encrypted' | 'public' | 'not_a_key' | 'unsupported'; key_type?: string; message: string }[]
}
const vectors = JSON.parse(
  readFileSync(new URL('../../../conformance/vectors/signing.json', import.meta.url), 'utf8'),
) as Vectors

const keygenFound = spawnSync('ssh-keygen', ['-?']).error === undefined
const skip = keygenFound ? false : 'not run: ssh-keygen not found (Debian package openssh-client)'
const dir = mkdtempSync(join(tmpdir(), 'iii-skills-signing-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A key ssh-keygen makes: its file and its allowed_signers line. */
function keygen(name: string, type: string, bits = '', ...extra: string[]): { file: string; line: string } {
  const file = join(dir, name)
  const args = ['-q', '-t', type, '-C', `${name}@test`, '-f', file, ...extra]
  if (bits) args.push('-b', bits)
  if (!extra.includes('-N')) args.push('-N', '')
  execFileSync('ssh-keygen', args)
  const [kt, b64] = readFileSync(`${file}.pub`, 'utf8').split(/\s+/)
  return { file, line: `${name}@example.com namespaces="iii-skills" ${kt} ${b64}\n` }
}

/** Whether `ssh-keygen -Y verify` accepts `signature` over `content` by `principal`. */
function keygenVerifies(allowed: string, principal: string, signature: string, content: string): boolean {
  writeFileSync(join(dir, 'allowed_signers'), allowed)
  writeFileSync(join(dir, 'content.sig'), signature)
  const r = spawnSync(
    'ssh-keygen',
    ['-Y', 'verify', '-f', join(dir, 'allowed_signers'), '-I', principal, '-n', 'iii-skills', '-s', join(dir, 'content.sig')],
    { input: content },
  )
  return r.status === 0
}

describe('signing vectors (conformance/vectors/signing.json)', () => {
  it('writes the canonical JSON of every prompt', () => {
    assert.ok(vectors.canonical_prompt.length >= 3)
    for (const c of vectors.canonical_prompt) assert.equal(canonicalPrompt(c), c.canonical)
  })
  it('words every key error the same way', () => {
    const path = `/keys/it's "mine"`
    for (const c of vectors.key_errors) {
      assert.equal(keyMessage(c.kind, path, c.key_type), c.message.replaceAll('{path}', JSON.stringify(path)))
    }
  })
})

describe('signatures ssh-keygen -Y verify accepts', { skip }, () => {
  const keys = keygenFound
    ? [
        ['ed25519', keygen('ed25519', 'ed25519')],
        ['ecdsa-256', keygen('ecdsa256', 'ecdsa', '256')],
        ['ecdsa-384', keygen('ecdsa384', 'ecdsa', '384')],
        ['ecdsa-521', keygen('ecdsa521', 'ecdsa', '521')],
        ['rsa', keygen('rsa', 'rsa', '2048')],
        ['rsa PEM', keygen('rsapem', 'rsa', '2048', '-m', 'PEM')],
        ['ecdsa PEM', keygen('ecdsapem', 'ecdsa', '384', '-m', 'PEM')],
      ] as const
    : []
  const body = '# Signed\n\nü, "quotes" and no trailing newline'
  for (const [name, key] of keys) {
    it(`${name}: skills and prompts`, async () => {
      const principal = `${key.file.split('/').pop()}@example.com`
      const iii = new MockClient()
      const publisher = createPublisher(iii, { logger: new MemoryLogger(), signingKey: key.file, internalNamespace: 't' })
      publisher.skill('acme/doc', body)
      const fid = publisher.prompt(
        {
          name: 'acme-review',
          description: 'Review <a> & "b"\n',
          args: z.object({ diff: z.string().describe('the diff'), style: z.string().optional() }),
        },
        () => 'x',
      )
      void publisher.start()
      await until(() => iii.calls.filter((c) => c.function_id.endsWith('::register')).length === 2)
      const sent = (fn: string) =>
        iii.calls.find((c) => c.function_id === fn)?.payload as { signature?: string } & Record<string, unknown>
      const skill = sent('skills::register')
      assert.match(skill.signature ?? '', /^-----BEGIN SSH SIGNATURE-----\n/)
      assert.ok(keygenVerifies(key.line, principal, skill.signature ?? '', body), 'ssh-keygen refuses the skill signature')
      assert.ok(!keygenVerifies(key.line, principal, skill.signature ?? '', `${body}\n`), 'verified over other bytes')
      const canonical =
        '{"arguments":[{"description":"the diff","name":"diff","required":true},{"name":"style","required":false}],' +
        `"description":"Review <a> & \\"b\\"\\n","function_id":"${fid}"}`
      const prompt = sent('prompts::register')
      assert.ok(keygenVerifies(key.line, principal, prompt.signature ?? '', canonical), 'ssh-keygen refuses the prompt signature')
      await publisher.close()
    })
  }

  it('sends a given signature as it is, over the key', async () => {
    const key = keygen('given', 'ed25519')
    const iii = new MockClient()
    const publisher = createPublisher(iii, { logger: new MemoryLogger(), signingKey: key.file, internalNamespace: 't' })
    publisher.skill('a/b', '# b\n', { signature: 'GIVEN' })
    void publisher.start()
    await until(() => iii.calls.some((c) => c.function_id === 'skills::register'))
    assert.equal((iii.calls.find((c) => c.function_id === 'skills::register')?.payload as { signature: string }).signature, 'GIVEN')
    await publisher.close()
  })

  it('refuses key files it cannot sign with, saying what to do', () => {
    const msg = (kind: string, path: string) =>
      (vectors.key_errors.find((c) => c.kind === kind)?.message ?? '').replaceAll('{path}', JSON.stringify(path))
    const enc = keygen('enc', 'ed25519', '', '-N', 'correct horse')
    const encPem = keygen('encpem', 'rsa', '2048', '-N', 'correct horse', '-m', 'PEM')
    const plain = keygen('plain', 'ed25519')
    writeFileSync(join(dir, 'junk'), 'not a key\n')
    const cases: [string, string][] = [
      [enc.file, 'encrypted'],
      [encPem.file, 'encrypted'],
      [`${plain.file}.pub`, 'public'],
      [join(dir, 'junk'), 'not_a_key'],
    ]
    if (spawnSync('ssh-keygen', ['-q', '-t', 'dsa', '-N', '', '-f', join(dir, 'dsa')]).status === 0) {
      cases.push([join(dir, 'dsa'), 'unsupported'])
    }
    for (const [path, kind] of cases) {
      assert.throws(() => SigningKey.load(path), new Error(msg(kind, path)), kind)
      assert.throws(() => createPublisher(new MockClient(), { signingKey: path }), new Error(msg(kind, path)), kind)
    }
    assert.throws(() => SigningKey.load(join(dir, 'absent')), /^Error: signing key ".*absent": ENOENT/)
  })

  it('names the key by the fingerprint ssh-keygen -l prints', () => {
    const key = keygen('fp', 'ecdsa', '521')
    const printed = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key.file}.pub`], { encoding: 'utf8' })
    assert.equal(SigningKey.load(key.file).fingerprint, printed.split(/\s+/)[1])
  })
})
