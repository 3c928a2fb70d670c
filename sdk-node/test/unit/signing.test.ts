// Signing (docs/trust.md): every key type ssh-keygen makes signs what the publisher registers,
// and the real `ssh-keygen -Y verify` accepts each signature over the exact bytes the registry
// checks; key files the publisher cannot use are refused with the words Go and Python use
// (conformance/vectors/signing.json).
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { z } from 'zod'
import { canonicalPrompt, createPublisher } from '../../src/index.js'
import { agentMessage, keyMessage, SigningKey } from '../../src/signing.js'
import { MemoryLogger, MockClient, until } from '../helpers/mock-client.js'

interface Vectors {
  canonical_prompt: {
    description: string
    function_id: string
    arguments: { name: string; description?: string | null; required?: boolean }[]
    canonical: string
  }[]
  key_errors: { kind: 'encrypted' | 'public' | 'encrypted_pem' | 'not_a_key' | 'unsupported'; key_type?: string; message: string }[]
  agent_errors: { kind: 'unreachable' | 'not_in_agent' | 'refused' | 'bad_answer' | 'bad_signature'; message: string }[]
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
  it('words every ssh-agent error the same way', () => {
    const path = `/keys/it's "mine"`
    const f = { socket: '/run/a "b"/agent.sock', fingerprint: 'SHA256:abc', count: 3, reason: 'why' }
    assert.equal(vectors.agent_errors.length, 5)
    for (const c of vectors.agent_errors) {
      const want = c.message
        .replaceAll('{path}', JSON.stringify(path))
        .replaceAll('{socket}', JSON.stringify(f.socket))
        .replaceAll('{fingerprint}', f.fingerprint)
        .replaceAll('{count}', String(f.count))
        .replaceAll('{reason}', f.reason)
      assert.equal(agentMessage(c.kind, path, f), want)
    }
  })
})

/** Runs fn with SSH_AUTH_SOCK set to socket (unset when undefined), restoring it after. */
function withAgentEnv<T>(socket: string | undefined, fn: () => T): T {
  const saved = process.env['SSH_AUTH_SOCK']
  if (socket === undefined) delete process.env['SSH_AUTH_SOCK']
  else process.env['SSH_AUTH_SOCK'] = socket
  try {
    return fn()
  } finally {
    if (saved === undefined) delete process.env['SSH_AUTH_SOCK']
    else process.env['SSH_AUTH_SOCK'] = saved
  }
}

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
      [encPem.file, 'encrypted_pem'],
      [`${plain.file}.pub`, 'public'],
      [join(dir, 'junk'), 'not_a_key'],
    ]
    if (spawnSync('ssh-keygen', ['-q', '-t', 'dsa', '-N', '', '-f', join(dir, 'dsa')]).status === 0) {
      cases.push([join(dir, 'dsa'), 'unsupported'])
    }
    for (const [path, kind] of cases) {
      // Without SSH_AUTH_SOCK (an agent could otherwise sign with the encrypted and public keys).
      withAgentEnv(undefined, () => {
        assert.throws(() => SigningKey.load(path), new Error(msg(kind, path)), kind)
        assert.throws(() => createPublisher(new MockClient(), { signingKey: path }), new Error(msg(kind, path)), kind)
      })
    }
    assert.throws(() => SigningKey.load(join(dir, 'absent')), /^Error: signing key ".*absent": ENOENT/)
  })

  it('names the key by the fingerprint ssh-keygen -l prints', () => {
    const key = keygen('fp', 'ecdsa', '521')
    const printed = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key.file}.pub`], { encoding: 'utf8' })
    assert.equal(SigningKey.load(key.file).fingerprint, printed.split(/\s+/)[1])
  })
})

const agentFound = spawnSync('ssh-agent', ['-h']).error === undefined && spawnSync('ssh-add', ['-h']).error === undefined
const skipAgent = !keygenFound
  ? 'not run: ssh-keygen not found (Debian package openssh-client)'
  : agentFound
    ? false
    : 'not run: ssh-agent not found (Debian package openssh-client)'

/** A real ssh-agent on a socket of its own, and ssh-add run against it with a passphrase. */
class Agent {
  readonly socket: string
  private readonly proc: ChildProcess
  private readonly askpass: string

  constructor(name: string) {
    this.socket = join(dir, `${name}.sock`)
    this.proc = spawn('ssh-agent', ['-D', '-a', this.socket], { stdio: 'ignore' })
    this.askpass = join(dir, 'askpass')
    writeFileSync(this.askpass, '#!/bin/sh\necho "correct horse"\n')
    chmodSync(this.askpass, 0o700)
  }

  /** The socket file exists from bind, before listen: waits until ssh-add reaches the agent (exit 1: no keys). */
  async ready(): Promise<void> {
    await until(() => {
      const r = spawnSync('ssh-add', ['-l'], { env: { ...process.env, SSH_AUTH_SOCK: this.socket }, stdio: 'ignore' })
      return r.status === 0 || r.status === 1
    })
  }

  /** ssh-add with its arguments; the passphrase (for keys and -x) comes from SSH_ASKPASS. */
  add(...args: string[]): void {
    execFileSync('ssh-add', args, {
      env: { ...process.env, SSH_AUTH_SOCK: this.socket, SSH_ASKPASS: this.askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
  }

  stop(): void {
    this.proc.kill()
  }
}

describe('signing through an ssh-agent (SSH_AUTH_SOCK)', { skip: skipAgent }, () => {
  const agent = agentFound && keygenFound ? new Agent('agent') : undefined
  after(() => agent?.stop())
  const body = '# Through the agent\n\nü and no trailing newline'
  const keys = agent
    ? ([
        ['ed25519', keygen('ag-ed25519', 'ed25519', '', '-N', 'correct horse')],
        ['ecdsa-384', keygen('ag-ecdsa', 'ecdsa', '384', '-N', 'correct horse')],
        ['rsa', keygen('ag-rsa', 'rsa', '2048', '-N', 'correct horse')],
      ] as const)
    : []

  for (const [name, key] of keys) {
    for (const [form, file] of [['encrypted key', key.file], ['.pub', `${key.file}.pub`]] as const) {
      it(`${name}, ${form}: ssh-keygen -Y verify accepts the signatures`, async () => {
        await agent?.ready()
        agent?.add(key.file)
        const principal = `${key.file.split('/').pop()}@example.com`
        const iii = new MockClient()
        const publisher = withAgentEnv(agent?.socket, () =>
          createPublisher(iii, { logger: new MemoryLogger(), signingKey: file, internalNamespace: 't' }),
        )
        publisher.skill('acme/agent', body)
        publisher.prompt({ name: 'acme-agent', description: 'Signed by the agent' }, () => 'x')
        void publisher.start()
        await until(() => iii.calls.filter((c) => c.function_id.endsWith('::register')).length === 2)
        const sent = (fn: string) => iii.calls.find((c) => c.function_id === fn)?.payload as { signature?: string }
        const skill = sent('skills::register').signature ?? ''
        assert.ok(keygenVerifies(key.line, principal, skill, body), 'ssh-keygen refuses the skill signature')
        assert.ok(!keygenVerifies(key.line, principal, skill, `${body}\n`), 'verified over other bytes')
        if (name === 'rsa') assert.ok(Buffer.from(skill.split('\n').slice(1, -2).join(''), 'base64').includes('rsa-sha2-512'))
        const canonical = canonicalPrompt({ description: 'Signed by the agent', function_id: 'prompt::acme-agent', arguments: [] })
        assert.ok(keygenVerifies(key.line, principal, sent('prompts::register').signature ?? '', canonical))
        await publisher.close()
      })
    }
  }

  const fingerprintOf = (pub: string): string =>
    execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pub], { encoding: 'utf8' }).split(/\s+/)[1] ?? ''
  const agentMsg = (kind: string, path: string, socket: string, fields: Record<string, string>): string => {
    let m = (vectors.agent_errors.find((c) => c.kind === kind)?.message ?? '')
      .replaceAll('{path}', JSON.stringify(path))
      .replaceAll('{socket}', JSON.stringify(socket))
    for (const [k, v] of Object.entries(fields)) m = m.replaceAll(`{${k}}`, v)
    return m
  }

  it('refuses an unreachable agent and a key the agent does not hold, saying what to do', async () => {
    const key = keygen('ag-absent', 'ed25519', '', '-N', 'correct horse')
    const gone = join(dir, 'no-agent.sock')
    for (const file of [key.file, `${key.file}.pub`]) {
      const [before = '', afterReason = ''] = agentMsg('unreachable', file, gone, {}).split('({reason})')
      const err = (() => {
        try {
          SigningKey.load(file, gone)
        } catch (e) {
          return (e as Error).message
        }
        return 'loaded'
      })()
      assert.ok(before.length > 0 && err.startsWith(`${before}(`), err)
      assert.ok(afterReason.length > 0 && err.endsWith(`)${afterReason}`) && err.includes('ENOENT'), err)
    }
    const empty = new Agent('empty')
    try {
      await empty.ready()
      const want = agentMsg('not_in_agent', key.file, empty.socket, { count: '0', fingerprint: fingerprintOf(`${key.file}.pub`) })
      assert.throws(() => SigningKey.load(key.file, empty.socket), new Error(want))
      assert.throws(
        () => withAgentEnv(empty.socket, () => createPublisher(new MockClient(), { signingKey: key.file })),
        new Error(want),
      )
    } finally {
      empty.stop()
    }
  })

  it('refuses a signature the agent will not make (a locked agent)', async () => {
    const key = keygen('ag-locked', 'ecdsa', '256', '-N', 'correct horse')
    const locked = new Agent('locked')
    try {
      await locked.ready()
      locked.add(key.file)
      const signer = SigningKey.load(`${key.file}.pub`, locked.socket)
      locked.add('-x') // lock: the agent now refuses to sign
      const want = agentMsg('refused', `${key.file}.pub`, locked.socket, { fingerprint: fingerprintOf(`${key.file}.pub`) })
      assert.throws(() => signer.sign('x'), new Error(want))
    } finally {
      locked.stop()
    }
  })

  it('refuses an agent that answers badly or signs wrongly, every read bounded', async () => {
    const key = keygen('ag-fake', 'ed25519')
    const [, b64] = readFileSync(`${key.file}.pub`, 'utf8').split(/\s+/)
    const fp = fingerprintOf(`${key.file}.pub`)
    // A fake agent in another process (this thread waits while the agent answers): it lists the
    // key, then answers a sign request as the mode says.
    const fake = (mode: string): { socket: string; proc: ChildProcess } => {
      const socket = join(dir, `fake-${mode}.sock`)
      const script = `
        const net = require('node:net')
        const pub = Buffer.from(${JSON.stringify(b64)}, 'base64')
        const str = (b) => { const l = Buffer.alloc(4); l.writeUInt32BE(b.length); return Buffer.concat([l, b]) }
        const msg = (b) => str(b)
        net.createServer((c) => c.once('data', (d) => {
          if (d[4] === 11) return c.end(msg(Buffer.concat([Buffer.from([12, 0, 0, 0, 1]), str(pub), str(Buffer.from('k'))])))
          if (${JSON.stringify(mode)} === 'huge') { const l = Buffer.alloc(4); l.writeUInt32BE(${256 * 1024 + 1}); return c.end(l) }
          if (${JSON.stringify(mode)} === 'type') return c.end(msg(Buffer.from([99])))
          if (${JSON.stringify(mode)} === 'short') { const l = Buffer.alloc(4); l.writeUInt32BE(100); return c.end(Buffer.concat([l, Buffer.from([14])])) }
          c.end(msg(Buffer.concat([Buffer.from([14]), str(Buffer.concat([str(Buffer.from('ssh-ed25519')), str(Buffer.alloc(64, 7))]))])))
        })).listen(${JSON.stringify(`${socket}.tmp`)}, () => require('node:fs').renameSync(${JSON.stringify(`${socket}.tmp`)}, ${JSON.stringify(socket)}))`
      return { socket, proc: spawn(process.execPath, ['-e', script], { stdio: 'ignore' }) }
    }
    const cases: [string, string, RegExp | undefined][] = [
      ['huge', 'bad_answer', /a message of 262145 bytes, larger than the 262144 allowed/],
      ['type', 'bad_answer', /message type 99, expected 14/],
      ['short', 'bad_answer', /closed before a whole answer/],
      ['badsig', 'bad_signature', undefined],
    ]
    for (const [mode, kind, reason] of cases) {
      const { socket, proc } = fake(mode)
      try {
        await until(() => existsSync(socket))
        const signer = SigningKey.load(`${key.file}.pub`, socket)
        const want = agentMsg(kind, `${key.file}.pub`, socket, { fingerprint: fp })
        if (reason === undefined) {
          assert.throws(() => signer.sign('x'), new Error(want), mode)
        } else {
          assert.throws(() => signer.sign('x'), (err: Error) => err.message.startsWith(want.split('{reason}')[0] ?? 'x') && reason.test(err.message), mode)
        }
      } finally {
        proc.kill()
      }
    }
  })
})
