// The conformance driver (dist/driver.js, conformance/DRIVER.md) against the real registry.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import type { IIIClient } from 'iii-sdk'
import { RegistryServer, eventually, freePort, sdkRoot, testClient } from '../helpers/server.js'

type Reply = { id: unknown; ok: boolean; result?: unknown; error?: string }
type Event = { event: string; [key: string]: unknown }

class Driver {
  readonly events: Event[] = []
  readonly stdoutNoise: string[] = []
  stderr = ''
  private readonly replies = new Map<unknown, (r: Reply) => void>()
  private nextId = 1
  readonly exited: Promise<number | null>

  constructor(private readonly child: ChildProcess) {
    const lines = createInterface({ input: child.stdout! })
    lines.on('line', (line) => {
      let msg: Record<string, unknown>
      try {
        msg = JSON.parse(line) as Record<string, unknown>
      } catch {
        this.stdoutNoise.push(line)
        return
      }
      if (typeof msg['event'] === 'string') {
        this.events.push(msg as Event)
        return
      }
      this.replies.get(msg['id'])?.(msg as Reply)
    })
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()))
    this.exited = new Promise((r) => child.once('exit', (code) => r(code)))
  }

  static start(url: string): Driver {
    const child = spawn(process.execPath, [join(sdkRoot, 'dist', 'driver.js')], {
      env: { ...process.env, III_URL: url },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    return new Driver(child)
  }

  /** Sends a raw line; the reply is matched on `id`. */
  sendLine(id: number, line: string): Promise<Reply> {
    const reply = new Promise<Reply>((resolve) => this.replies.set(id, resolve))
    this.child.stdin!.write(`${line}\n`)
    return reply
  }

  send(cmd: string, args: Record<string, unknown> = {}): Promise<Reply> {
    const id = this.nextId++
    return this.sendLine(id, JSON.stringify({ id, cmd, ...args }))
  }

  async ok(cmd: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const r = await this.send(cmd, args)
    assert.equal(r.ok, true, `${cmd} failed: ${r.error}\n${this.stderr}`)
    return r.result
  }

  /** Closes the driver's stdin (it must then exit 0). */
  endInput(): void {
    this.child.stdin!.end()
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL')
  }
}

async function call<T>(iii: IIIClient, function_id: string, payload: unknown = {}): Promise<T> {
  return iii.trigger<unknown, T>({ function_id, payload, timeoutMs: 5000 })
}

describe('conformance driver (node dist/driver.js)', () => {
  let server: RegistryServer
  let probe: IIIClient

  before(async () => {
    server = await RegistryServer.start()
    probe = testClient(server.url, 'probe')
  })

  after(async () => {
    await probe?.shutdown()
    await server?.dispose()
  })

  it('speaks the protocol: fixtures, start, events, close', async () => {
    const d = Driver.start(server.url)
    try {
      assert.deepEqual(await d.ok('hello'), { sdk: 'node', version: '0.1.0' })
      assert.equal(await d.ok('configure', { backoff: { initial_ms: 50, max_ms: 200 } }), null)

      const skill = await d.send('skill', { skill_id: 'drv', markdown: '# drv\n\nDriver skill.\n' })
      assert.deepEqual(skill.result, null)
      assert.equal(skill.ok, true, skill.error)
      const bad = await d.send('skill', { skill_id: 'fn/x', markdown: '# x' })
      assert.deepEqual(bad.ok, false)
      assert.equal(
        bad.error,
        'id may not have "fn" as its first segment (reserved as the iii://fn/ section-URI marker): "fn/x"',
      )

      assert.deepEqual(await d.ok('section', { path: 'drv/health', output: { content: '# ok' } }), {
        uri: 'iii://fn/drv/health',
      })
      assert.deepEqual(await d.ok('section', { path: 'drv/data', output: [1, 'two'] }), { uri: 'iii://fn/drv/data' })
      const badSection = await d.send('section', { path: 'state/set', output: 1 })
      assert.equal(badSection.error, `Function 'state::set' is in an internal namespace and cannot back a skill resource`)

      assert.deepEqual(await d.ok('prompt', { fixture: 'send-email', name: 'drv-mail' }), {
        function_id: 'prompt::drv-mail',
      })
      assert.deepEqual(await d.ok('prompt', { fixture: 'count-words', name: 'drv-count' }), {
        function_id: 'prompt::drv-count',
      })
      assert.deepEqual(await d.ok('prompt', { fixture: 'dialogue', name: 'drv-dialogue' }), {
        function_id: 'prompt::drv-dialogue',
      })
      const badPrompt = await d.send('prompt', { fixture: 'send-email', name: 'Drv Mail' })
      assert.equal(badPrompt.error, `name may only contain lowercase ASCII letters, digits, '-' and '_': "Drv Mail"`)

      const missing = await d.send('skill', { markdown: '# x' })
      assert.deepEqual(missing, { id: missing.id, ok: false, error: 'skill: missing argument "skill_id" (a string)' })
      const numeric = await d.send('function', { fixture: 'echo', function_id: 7 })
      assert.equal(numeric.error, 'function: argument "function_id" must be a string, got 7')
      const noCmd = await d.sendLine(99, '{"id":99}')
      assert.equal(noCmd.error, 'bad command line: missing "cmd" (the command name, a string)')

      const fn = await d.send('function', { fixture: 'echo', function_id: 'drv::echo' })
      assert.equal(fn.ok, true, fn.error)
      assert.equal(await d.ok('subscribe', { kind: 'skills' }), null)
      assert.equal(await d.ok('subscribe', { kind: 'prompts' }), null)
      assert.equal((await d.send('subscribe', { kind: 'nope' })).ok, false)
      assert.equal((await d.send('no-such-command')).ok, false)

      assert.deepEqual(await d.ok('start', { wait: true }), { registered: true, rejected: [] })
      assert.ok(d.events.some((e) => e.event === 'registered'))
      assert.ok(d.events.some((e) => e.event === 'log' && e['level'] === 'info'))
      assert.equal((await d.send('configure', { backoff: { initial_ms: 1 } })).ok, false, 'configure after start')

      // What the registry now serves, seen from another client.
      const { skills } = await call<{ skills: { id: string }[] }>(probe, 'skills::list')
      assert.ok(skills.some((s) => s.id === 'drv'))
      const mail = await call<{ messages: { content: { text: string } }[] }>(probe, 'prompts::mcp-get', {
        name: 'drv-mail',
        arguments: { to: 'ada@example.com', subject: 'Hi', urgent: 'true' },
      })
      assert.equal(mail.messages[0]?.content.text, 'Compose an email to ada@example.com with the subject "Hi". Mark it urgent.')
      const count = await call<{ messages: { content: { text: string } }[] }>(probe, 'prompts::mcp-get', {
        name: 'drv-count',
        arguments: { limit: '7' },
      })
      assert.equal(count.messages[0]?.content.text, 'Use at most 7 words.')
      await assert.rejects(
        call(probe, 'prompts::mcp-get', { name: 'drv-count', arguments: { limit: 'abc' } }),
        (err: Error) => err.message.includes('prompt "drv-count": argument "limit" must be an integer, got "abc"'),
      )
      const dialogue = await call<{ messages: unknown[] }>(probe, 'prompts::mcp-get', { name: 'drv-dialogue' })
      assert.deepEqual(dialogue.messages, [
        { role: 'user', content: { type: 'text', text: 'hi' } },
        { role: 'assistant', content: { type: 'text', text: 'hello' } },
      ])
      const section = await call<{ contents: { text: string }[] }>(probe, 'skills::resources-read', {
        uri: 'iii://fn/drv/health',
      })
      assert.equal(section.contents[0]?.text, '# ok')
      assert.deepEqual(await call(probe, 'drv::echo', { message: 'ab', repeat: 2 }), { echo: 'abab' })
      const info = await call<{ request_schema: { type: string; required: string[] } }>(
        probe,
        'engine::functions::info',
        { function_id: 'drv::echo' },
      )
      assert.equal(info.request_schema.type, 'object')
      assert.deepEqual(info.request_schema.required, ['message', 'repeat'])

      // Change events reach the subscriptions.
      await eventually(
        async () => {
          await call(probe, 'skills::register', { id: 'drv/probe', skill: '# probe' })
          await call(probe, 'prompts::register', { name: 'drv-probe', description: 'd', function_id: 'x::y' })
          return (
            d.events.some((e) => e.event === 'skill_change' && e['id'] === 'drv/probe' && e['op'] === 'register') &&
            d.events.some((e) => e.event === 'prompt_change' && e['name'] === 'drv-probe' && e['op'] === 'register')
          )
        },
        () => `no change events: ${JSON.stringify(d.events)}`,
      )

      assert.equal(await d.ok('close', { unregister: true }), null)
      assert.equal(await d.exited, 0)
      const after = await call<{ skills: { id: string }[] }>(probe, 'skills::list')
      assert.ok(!after.skills.some((s) => s.id === 'drv'), 'close with unregister removed the skill')
      const prompts = await call<{ prompts: { name: string }[] }>(probe, 'prompts::list')
      assert.ok(!prompts.prompts.some((p) => p.name === 'drv-mail'))
      assert.deepEqual(d.stdoutNoise, [], 'nothing but protocol lines on stdout')
    } finally {
      d.kill()
    }
  })

  it('reports gave_up and the exact warning when nothing answers; start without wait returns at once', async () => {
    const d = Driver.start(`ws://127.0.0.1:${await freePort()}`)
    try {
      await d.ok('configure', { backoff: { initial_ms: 20, multiplier: 2, max_ms: 40, give_up_ms: 300 } })
      await d.ok('skill', { skill_id: 'lonely', markdown: '# lonely' })
      assert.equal(await d.ok('start', { wait: false }), null)
      await eventually(
        () => d.events.some((e) => e.event === 'gave_up'),
        () => `no gave_up event: ${JSON.stringify(d.events)}`,
      )
      assert.ok(
        d.events.some(
          (e) =>
            e.event === 'log' &&
            e['level'] === 'warn' &&
            e['message'] === 'skills handshake gave up; install / start it and restart this worker',
        ),
      )
      assert.deepEqual(await d.ok('start', { wait: true }), { registered: false, rejected: [] })
      d.endInput()
      assert.equal(await d.exited, 0, 'exits 0 when stdin closes')
    } finally {
      d.kill()
    }
  })

  it('answers start with the engine-address error at once when III_URL is malformed, and keeps running', async () => {
    const d = Driver.start('ws://engine:99999')
    try {
      assert.deepEqual(await d.ok('hello'), { sdk: 'node', version: '0.1.0' })
      const r = await d.send('start', { wait: true })
      assert.equal(r.ok, false)
      assert.equal(
        r.error,
        'invalid engine URL "ws://engine:99999" (from III_URL): the port is not a number from 1 to 65535; expected ws://host:port or wss://host:port',
      )
      assert.deepEqual(await d.ok('hello'), { sdk: 'node', version: '0.1.0' }, 'still answering')
      d.endInput()
      assert.equal(await d.exited, 0)
    } finally {
      d.kill()
    }
  })
})
