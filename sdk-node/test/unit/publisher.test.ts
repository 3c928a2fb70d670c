import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { z } from 'zod'
import { ValidationError, createPublisher, type PromptChange, type SkillChange } from '../../src/index.js'
import { InvocationFailure, MemoryLogger, MockClient, until } from '../helpers/mock-client.js'

const quick = { initialMs: 1, multiplier: 2, maxMs: 4, giveUpMs: 60_000 }

function setup() {
  const iii = new MockClient()
  const logger = new MemoryLogger()
  const publisher = createPublisher(iii, { logger, backoff: quick, internalNamespace: 'test-pub' })
  return { iii, logger, publisher }
}

const SendEmail = z.object({
  to: z.string().describe('Recipient address'),
  subject: z.string().describe('Subject line'),
  urgent: z.boolean().optional().describe('Mark as urgent'),
})

describe('Publisher content', () => {
  it('validates skills locally with the registry messages', () => {
    const { publisher } = setup()
    assert.throws(() => publisher.skill('fn/x', '# x'), ValidationError)
    assert.throws(() => publisher.skill('ok', ''), new ValidationError('skill must be non-empty'))
    assert.throws(
      () => publisher.skill('Bad', '# x'),
      new ValidationError(
        `invalid id (segment 1 of "Bad"): segment may only contain lowercase ASCII letters, digits, '-' and '_': "Bad"`,
      ),
    )
  })

  it('registers a section function and returns its URI; the handler output passes through', async () => {
    const { iii, publisher } = setup()
    const uri = publisher.section('resend/health', () => ({ content: '# Resend health' }))
    assert.equal(uri, 'iii://fn/resend/health')
    assert.deepEqual(await iii.invoke('resend::health', {}), { content: '# Resend health' })
    const json = publisher.section('resend/stats', async () => ({ sent: 3, ok: true }))
    assert.equal(json, 'iii://fn/resend/stats')
    assert.deepEqual(await iii.invoke('resend::stats', {}), { sent: 3, ok: true })
    assert.throws(
      () => publisher.section('state/set', () => 'x'),
      new ValidationError(`Function 'state::set' is in an internal namespace and cannot back a skill resource`),
    )
  })

  it('registers a prompt handler with checked, converted arguments', async () => {
    const { iii, publisher } = setup()
    const fid = publisher.prompt({ name: 'send-email', description: 'Compose an email', args: SendEmail }, (a) => ({
      content: `to ${a.to} re ${a.subject}${a.urgent ? ' (urgent)' : ''}`,
    }))
    assert.equal(fid, 'prompt::send-email')
    const fn = iii.functions.get('prompt::send-email')
    assert.ok(fn)
    const fmt = fn.options?.request_format as { properties: Record<string, unknown>; required: string[] }
    assert.deepEqual(Object.keys(fmt.properties), ['to', 'subject', 'urgent'])
    assert.deepEqual(fmt.required, ['to', 'subject'])

    assert.deepEqual(await iii.invoke(fid, { to: 'a@b.c', subject: 'Hi', urgent: 'true', _caller_worker_id: 'w' }), {
      content: 'to a@b.c re Hi (urgent)',
    })
    await assert.rejects(iii.invoke(fid, { subject: 'Hi' }), {
      message: 'prompt "send-email": missing required argument "to"',
    })
  })

  it('honours a custom handler id and refuses invalid prompts', () => {
    const { iii, publisher } = setup()
    assert.equal(
      publisher.prompt({ name: 'greet', description: 'Greet', functionId: 'demo::greet_prompt' }, () => 'hi'),
      'demo::greet_prompt',
    )
    assert.ok(iii.functions.has('demo::greet_prompt'))
    assert.throws(
      () => publisher.prompt({ name: 'x', description: 'd', functionId: 'state::set' }, () => 'x'),
      new ValidationError(`Prompt handler 'state::set' is in an internal namespace and cannot back a prompt`),
    )
    assert.throws(() => publisher.prompt({ name: 'x', description: ' ' }, () => 'x'), new ValidationError('description must be non-empty'))
    assert.throws(
      () => publisher.prompt({ name: 'x', description: 'd', args: z.object({ ' ': z.string() }) }, () => 'x'),
      new ValidationError('argument name must be non-empty'),
    )
    assert.equal(iii.functions.has('prompt::x'), false, 'nothing is registered for a refused prompt')
  })

  it('replaces a prompt defined twice', async () => {
    const { iii, publisher } = setup()
    publisher.prompt({ name: 'p', description: 'one' }, () => 'one')
    publisher.prompt({ name: 'p', description: 'two' }, () => 'two')
    assert.equal(await iii.invoke('prompt::p', {}), 'two')
    await publisher.start()
    assert.deepEqual(
      iii.callsTo('prompts::register').map((c) => c.payload),
      [{ name: 'p', description: 'two', arguments: [], function_id: 'prompt::p' }],
    )
  })

  it('registers typed functions with JSON Schema formats and checks input and output', async () => {
    const { iii, publisher } = setup()
    const ref = publisher.function(
      'demo::echo',
      {
        input: z.object({ message: z.string(), repeat: z.int() }),
        output: z.object({ echo: z.string() }),
        description: 'Echo',
      },
      ({ message, repeat }) => ({ echo: message.repeat(repeat) }),
    )
    assert.equal(ref.id, 'demo::echo')
    const fn = iii.functions.get('demo::echo')
    assert.ok(fn)
    assert.equal(fn.options?.description, 'Echo')
    const req = fn.options?.request_format as { type: string; properties: object; required: string[] }
    const res = fn.options?.response_format as { type: string; properties: object; required: string[] }
    assert.equal(req.type, 'object')
    assert.deepEqual(Object.keys(req.properties), ['message', 'repeat'])
    assert.deepEqual(req.required, ['message', 'repeat'])
    assert.equal(res.type, 'object')
    assert.deepEqual(res.required, ['echo'])

    assert.deepEqual(await iii.invoke('demo::echo', { message: 'ab', repeat: 2, _caller_worker_id: 'x' }), { echo: 'abab' })
    await assert.rejects(iii.invoke('demo::echo', { message: 'ab', repeat: 'x' }), /function "demo::echo": invalid input: repeat: /)

    const bad = publisher.function('demo::bad', { input: z.object({}), output: z.object({ n: z.int() }) }, () => ({ n: 'x' }) as never)
    await assert.rejects(iii.invoke(bad.id, {}), /function "demo::bad": handler returned invalid output: n: /)
    ref.unregister()
    assert.equal(iii.functions.has('demo::echo'), false)
  })

  it('keeps the deprecated fn as the same call as function for one release', async () => {
    const { iii, publisher } = setup()
    const ref = publisher.fn('demo::old', { input: z.object({ n: z.int() }), output: z.object({ n: z.int() }) }, ({ n }) => ({ n: n + 1 }))
    assert.equal(ref.id, 'demo::old')
    assert.deepEqual(await iii.invoke('demo::old', { n: 1 }), { n: 2 })
  })
})

describe('Publisher registration', () => {
  it('registers skills and prompts in the order they were added, each call with a 5 s timeout', async () => {
    const { iii, publisher } = setup()
    publisher.skill('resend', '# resend')
    publisher.prompt({ name: 'send-email', description: 'Compose', args: SendEmail }, () => 'x')
    publisher.skill('resend/email', '# resend/email')
    const result = await publisher.start()
    assert.deepEqual(result, { registered: true, rejected: [] })
    assert.deepEqual(
      iii.calls.map((c) => [c.function_id, c.timeoutMs]),
      [
        ['skills::register', 5000],
        ['prompts::register', 5000],
        ['skills::register', 5000],
      ],
    )
    assert.deepEqual(iii.calls[0]?.payload, { id: 'resend', skill: '# resend' })
    assert.deepEqual(iii.calls[1]?.payload, {
      name: 'send-email',
      description: 'Compose',
      arguments: [
        { name: 'to', description: 'Recipient address', required: true },
        { name: 'subject', description: 'Subject line', required: true },
        { name: 'urgent', description: 'Mark as urgent', required: false },
      ],
      function_id: 'prompt::send-email',
    })
  })

  it('emits registered, and gaveUp with the exact warning when the registry never answers', async () => {
    const iii = new MockClient()
    const logger = new MemoryLogger()
    iii.respond = async () => {
      throw new InvocationFailure('function_not_found', 'Function skills::register not found')
    }
    const publisher = createPublisher(iii, { logger, backoff: { ...quick, giveUpMs: 15 } })
    let gaveUp = 0
    publisher.on('gaveUp', () => void gaveUp++)
    publisher.skill('a', '# a')
    assert.deepEqual(await publisher.start(), { registered: false, rejected: [] })
    assert.equal(gaveUp, 1)
    assert.deepEqual(logger.at('warn'), ['skills handshake gave up; install / start it and restart this worker'])
  })

  it('registers everything again after the engine connection is re-established', async () => {
    const { iii, publisher } = setup()
    let registered = 0
    publisher.on('registered', () => void registered++)
    publisher.skill('a', '# a')
    await publisher.start()
    assert.equal(registered, 1)
    await iii.connect() // the connection the publisher started on: nothing to redo
    assert.equal(iii.callsTo('skills::register').length, 1)
    await iii.connect() // a reconnect
    await until(() => registered === 2)
    assert.equal(iii.callsTo('skills::register').length, 2)
    const sentinel = iii.triggersOf('test-pub::connection')
    assert.equal(sentinel.length, 1)
    assert.deepEqual(iii.functions.get(sentinel[0]?.function_id ?? '')?.options?.metadata, { internal: true })
  })

  it('registers again when skills::register appears after having been absent', async () => {
    const { iii, publisher } = setup()
    let up = false
    iii.respond = async (c) => {
      if (c.function_id === 'skills::register' && !up) throw new InvocationFailure('function_not_found', 'not found')
      return {}
    }
    const slow = createPublisher(iii, {
      logger: new MemoryLogger(),
      backoff: { initialMs: 3_600_000, giveUpMs: 7_200_000 },
      internalNamespace: 'slow-pub',
    })
    slow.skill('a', '# a')
    const run = slow.start()
    await until(() => iii.callsTo('skills::register').length === 1)
    up = true
    await iii.fire('engine::functions-available', {
      event: 'functions_changed',
      functions: [{ function_id: 'skills::register' }, { function_id: 'skills::list' }],
    })
    assert.deepEqual(await run, { registered: true, rejected: [] })
    assert.equal(iii.callsTo('skills::register').length, 2)

    // Once registered: gone, then back → everything is registered again.
    let again = 0
    slow.on('registered', () => void again++)
    await iii.fire('engine::functions-available', { event: 'functions_changed', functions: [] })
    await iii.fire('engine::functions-available', {
      event: 'functions_changed',
      functions: [{ function_id: 'skills::register' }],
    })
    await until(() => again === 1)
    assert.equal(iii.callsTo('skills::register').length, 3)
    await slow.close()
    await publisher.close()
  })

  it('asks engine::functions::list when the event carries no function list', async () => {
    const { iii, publisher } = setup()
    let listed = false
    iii.respond = async (c) => {
      if (c.function_id === 'engine::functions::list') return { functions: listed ? [{ function_id: 'skills::register' }] : [] }
      return {}
    }
    publisher.skill('a', '# a')
    await publisher.start()
    await iii.fire('engine::functions-available', {})
    listed = true
    let again = 0
    publisher.on('registered', () => void again++)
    await iii.fire('engine::functions-available', {})
    await until(() => again === 1)
    assert.equal(iii.callsTo('engine::functions::list').length, 2)
  })

  it('registers a skill added after start right away', async () => {
    const { iii, publisher } = setup()
    await publisher.start()
    publisher.skill('late', '# late')
    await until(() => iii.callsTo('skills::register').length === 1)
    assert.deepEqual(iii.calls[0]?.payload, { id: 'late', skill: '# late' })
  })
})

describe('Publisher subscriptions', () => {
  it('decodes skills::on-change and prompts::on-change into typed events', async () => {
    const { iii, publisher, logger } = setup()
    const skills: SkillChange[] = []
    const prompts: PromptChange[] = []
    const off = publisher.onSkillChange((c) => void skills.push(c))
    publisher.onPromptChange((c) => void prompts.push(c))
    const [binding] = iii.triggersOf('skills::on-change')
    assert.ok(binding)
    assert.deepEqual(iii.functions.get(binding.function_id)?.options?.metadata, { internal: true })

    await iii.fire('skills::on-change', { op: 'register', id: 'resend', _caller_worker_id: 'w' })
    await iii.fire('prompts::on-change', { op: 'unregister', name: 'send-email' })
    await iii.fire('skills::on-change', { op: 'explode', id: 'x' })
    assert.deepEqual(skills, [{ op: 'register', id: 'resend' }])
    assert.deepEqual(prompts, [{ op: 'unregister', name: 'send-email' }])
    assert.equal(logger.at('warn').length, 1)
    assert.match(logger.at('warn')[0] ?? '', /^ignoring malformed skills::on-change event/)

    off()
    assert.equal(iii.triggersOf('skills::on-change').length, 0)
    assert.equal(iii.functions.has(binding.function_id), false)
  })

  it('logs a failing change handler instead of failing the invocation', async () => {
    const { iii, publisher, logger } = setup()
    publisher.onSkillChange(() => {
      throw new Error('boom')
    })
    await iii.fire('skills::on-change', { op: 'register', id: 'a' })
    assert.deepEqual(logger.at('error'), ['skills::on-change handler failed: boom'])
  })
})

describe('Publisher close', () => {
  it('unregisters what the registry accepted, then every function and trigger', async () => {
    const { iii, publisher } = setup()
    publisher.skill('resend', '# resend')
    publisher.prompt({ name: 'greet', description: 'Greet' }, () => 'hi')
    publisher.section('resend/health', () => 'ok')
    publisher.onSkillChange(() => {})
    await publisher.start()
    await publisher.close({ unregister: true })
    assert.deepEqual(iii.callsTo('skills::unregister').map((c) => c.payload), [{ id: 'resend' }])
    assert.deepEqual(iii.callsTo('prompts::unregister').map((c) => c.payload), [{ name: 'greet' }])
    assert.deepEqual([...iii.functions.keys()], [])
    assert.deepEqual([...iii.triggers.keys()], [])
    assert.throws(() => publisher.skill('more', '# more'), /publisher is closed/)
  })

  it('without unregister leaves the registry alone', async () => {
    const { iii, publisher } = setup()
    publisher.skill('resend', '# resend')
    await publisher.start()
    await publisher.close()
    assert.equal(iii.callsTo('skills::unregister').length, 0)
  })

  it('stops a start() that is still retrying', async () => {
    const iii = new MockClient()
    iii.respond = async () => {
      throw new InvocationFailure('TIMEOUT', 'timed out')
    }
    const publisher = createPublisher(iii, {
      logger: new MemoryLogger(),
      backoff: { initialMs: 3_600_000, giveUpMs: 7_200_000 },
    })
    publisher.skill('a', '# a')
    const run = publisher.start()
    await until(() => iii.calls.length === 1)
    await publisher.close({ unregister: true })
    assert.deepEqual(await run, { registered: false, rejected: [] })
    assert.equal(iii.callsTo('skills::unregister').length, 0, 'nothing was accepted, nothing to remove')
  })
})
