import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  DEFAULT_BACKOFF,
  Registrar,
  isNotFound,
  isNotFoundError,
  isPermanentError,
  resolveBackoff,
  type BackoffOptions,
  type RegistrationItem,
} from '../../src/registrar.js'
import { InvocationFailure, MemoryLogger, until } from '../helpers/mock-client.js'

const GAVE_UP = 'skills handshake gave up; install / start it and restart this worker'

function item(id: string): RegistrationItem {
  return {
    key: `skill:${id}`,
    label: `skill "${id}"`,
    kind: 'skill',
    name: id,
    functionId: 'skills::register',
    payload: { id, skill: `# ${id}` },
  }
}

function setup(call: (item: RegistrationItem) => Promise<unknown>) {
  const logger = new MemoryLogger()
  const events = { registered: 0, gaveUp: 0, absent: 0 }
  const registrar = new Registrar({
    call,
    logger,
    onRegistered: () => void events.registered++,
    onGaveUp: () => void events.gaveUp++,
    onRegistryAbsent: () => void events.absent++,
  })
  return { registrar, logger, events }
}

const fast = (b: BackoffOptions = {}) => resolveBackoff({ initialMs: 1, multiplier: 2, maxMs: 4, giveUpMs: 60_000, ...b })

describe('resolveBackoff', () => {
  it('defaults to 5 s, ×2, 60 s cap, 180 s give-up', () => {
    assert.deepEqual(resolveBackoff(undefined), { initialMs: 5000, multiplier: 2, maxMs: 60000, giveUpMs: 180000 })
    assert.deepEqual(DEFAULT_BACKOFF, resolveBackoff({}))
  })
  it('takes any subset', () => {
    assert.deepEqual(resolveBackoff({ giveUpMs: 10 }), { ...DEFAULT_BACKOFF, giveUpMs: 10 })
  })
  it('refuses nonsense', () => {
    assert.throws(() => resolveBackoff({ initialMs: -1 }), RangeError)
    assert.throws(() => resolveBackoff({ maxMs: Number.NaN }), RangeError)
    assert.throws(() => resolveBackoff({ multiplier: 0.5 }), RangeError)
  })
})

describe('isNotFound', () => {
  it('decides by the NOT_FOUND code, whatever the text', () => {
    assert.ok(isNotFound(new InvocationFailure('NOT_FOUND', 'skill a has no version 9 (kept: 1-2)')))
    assert.ok(!isNotFound(new InvocationFailure('INVALID_ARGUMENTS', 'Skill not found: a/b')))
    assert.ok(!isNotFound(new InvocationFailure('function_not_found', 'Function skills::versions not found')))
  })
  it('falls back to the text under the generic code of an upstream registry', () => {
    assert.ok(isNotFound(new InvocationFailure('invocation_failed', 'Skill not found: a/b')))
    assert.ok(isNotFound(new InvocationFailure('invocation_failed', 'handler error: Prompt not found: p')))
    assert.ok(!isNotFound(new InvocationFailure('invocation_failed', 'state::get: invocation timed out')))
    assert.ok(!isNotFound(null))
  })
  it('keeps isNotFoundError, deprecated, as the same function for one release', () => {
    assert.equal(isNotFoundError, isNotFound)
  })
})

describe('isPermanentError', () => {
  it('recognises the registry validation messages, wrapped or not', () => {
    assert.ok(isPermanentError(new InvocationFailure('invocation_failed', 'handler error: id must be non-empty')))
    assert.ok(isPermanentError(new Error('skill body too large (300000 bytes; max 262144)')))
    assert.ok(isPermanentError(new Error('duplicate argument name: x')))
  })
  it('decides by the INVALID_ARGUMENTS code first, whatever the text', () => {
    assert.ok(isPermanentError(new InvocationFailure('INVALID_ARGUMENTS', 'a refusal no marker knows')))
  })
  it('gives up an id outside the token namespaces, not one another connection holds', () => {
    assert.ok(isPermanentError(new InvocationFailure('OUT_OF_SCOPE', 'forbidden: skill "b/x" is outside the namespaces of token "a" (a)')))
    assert.ok(!isPermanentError(new InvocationFailure('FORBIDDEN', 'skill "a/x" belongs to another worker (w1)')))
  })
  it('treats transport problems as transient', () => {
    assert.ok(!isPermanentError(new InvocationFailure('TIMEOUT', 'invocation timed out after 5000ms')))
    assert.ok(!isPermanentError(new InvocationFailure('function_not_found', 'Function skills::register not found')))
    assert.ok(!isPermanentError(new InvocationFailure('invocation_stopped', 'Invocation stopped')))
  })
})

describe('Registrar', () => {
  it('registers every item in insertion order and reports success', async () => {
    const seen: string[] = []
    const { registrar, events, logger } = setup(async (i) => void seen.push(i.key))
    for (const id of ['b', 'a', 'c']) registrar.upsert(item(id))
    registrar.upsert(item('a')) // replacing keeps the original position
    const result = await registrar.start(fast())
    assert.deepEqual(result, { registered: true, rejected: [] })
    assert.deepEqual(seen, ['skill:b', 'skill:a', 'skill:c'])
    assert.equal(events.registered, 1)
    assert.deepEqual(logger.at('info'), ['registered with the skills registry: 3 skills, 0 prompts'])
  })

  it('retries only what is still missing, with capped exponential waits', async () => {
    let failuresLeft = 5
    const seen: string[] = []
    const { registrar, logger, events } = setup(async (i) => {
      seen.push(i.key)
      if (i.key === 'skill:b' && failuresLeft-- > 0) throw new InvocationFailure('TIMEOUT', 'timed out')
    })
    registrar.upsert(item('a'))
    registrar.upsert(item('b'))
    registrar.upsert(item('c'))
    const result = await registrar.start(fast())
    assert.equal(result.registered, true)
    assert.deepEqual(seen, ['skill:a', ...Array(6).fill('skill:b'), 'skill:c'])
    assert.deepEqual(
      logger.at('debug'),
      [1, 2, 4, 4, 4].map((ms) => `retrying skills registration in ${ms} ms`),
    )
    assert.equal(events.registered, 1)
  })

  it('gives up at the deadline with the exact warning and reports registered: false', async () => {
    let attempts = 0
    const { registrar, logger, events } = setup(async () => {
      attempts++
      throw new InvocationFailure('function_not_found', 'Function skills::register not found')
    })
    registrar.upsert(item('a'))
    const result = await registrar.start(fast({ giveUpMs: 20 }))
    assert.deepEqual(result, { registered: false, rejected: [] })
    assert.deepEqual(logger.at('warn'), [GAVE_UP])
    assert.equal(events.gaveUp, 1)
    assert.equal(events.registered, 0)
    assert.ok(attempts >= 2, `expected retries before giving up, got ${attempts} attempt(s)`)
    assert.ok(events.absent >= 1)
  })

  it('registers the rest past a refusal, then reports every refusal of the round with its advice', async () => {
    const seen: string[] = []
    const { registrar, logger, events } = setup(async (i) => {
      seen.push(i.key)
      if (i.key === 'skill:bad') throw new InvocationFailure('invocation_failed', 'id too long (2000 chars; max 1024): "…"')
      if (i.key === 'skill:worse') throw new InvocationFailure('INVALID_ARGUMENTS', 'skill must be non-empty')
    })
    for (const id of ['bad', 'good', 'worse', 'last']) registrar.upsert(item(id))
    const result = await registrar.start(fast())
    // Everything else of the round was registered before start() resolved.
    assert.deepEqual(
      registrar.acceptedItems().map((i) => i.key),
      ['skill:good', 'skill:last'],
    )
    const fix = 'fix the skill and restart this worker (not retried)'
    assert.deepEqual(result, {
      registered: false,
      rejected: [
        { key: 'skill:bad', label: 'skill "bad"', kind: 'skill', name: 'bad', code: 'invocation_failed',
          message: 'id too long (2000 chars; max 1024): "…"', advice: fix, retried: false },
        { key: 'skill:worse', label: 'skill "worse"', kind: 'skill', name: 'worse', code: 'INVALID_ARGUMENTS',
          message: 'skill must be non-empty', advice: fix, retried: false },
      ],
    })
    assert.deepEqual(logger.at('error'), [
      `skills registry refused skill "bad" (invocation_failed): id too long (2000 chars; max 1024): "…"; ${fix}`,
      `skills registry refused skill "worse" (INVALID_ARGUMENTS): skill must be non-empty; ${fix}`,
    ])
    assert.deepEqual(seen, ['skill:bad', 'skill:good', 'skill:worse', 'skill:last'])
    assert.equal(events.registered, 0, 'a round with a refusal is not a full registration')
  })

  it('gives up an id outside its token namespaces at once and retries one another connection holds', async () => {
    const outside = 'forbidden: skill "billing/x" is outside the namespaces of token "acme" (acme)'
    const held = 'skill "acme/x" belongs to another worker (w1, named "acme-old"); only the worker that registered it may register or unregister it while it is connected'
    const seen: string[] = []
    let contested = 0
    const { registrar, logger } = setup(async (i) => {
      seen.push(i.key)
      if (i.key === 'skill:billing/x') throw new InvocationFailure('OUT_OF_SCOPE', outside)
      if (i.key === 'skill:acme/x' && contested++ === 0) throw new InvocationFailure('FORBIDDEN', held)
    })
    registrar.upsert(item('billing/x'))
    registrar.upsert(item('acme/x'))
    const result = await registrar.start(fast())
    const scope =
      "publish it under a namespace of this worker's token, or give the worker a token whose namespaces cover it (not retried)"
    const stop =
      'stop worker "acme-old" (w1), which holds it, or publish under another id; this worker retries until its registration deadline'
    assert.deepEqual(result, {
      registered: false,
      rejected: [
        { key: 'skill:billing/x', label: 'skill "billing/x"', kind: 'skill', name: 'billing/x', code: 'OUT_OF_SCOPE',
          message: outside, advice: scope, retried: false },
        { key: 'skill:acme/x', label: 'skill "acme/x"', kind: 'skill', name: 'acme/x', code: 'FORBIDDEN',
          message: held, holder: { workerId: 'w1', workerName: 'acme-old' }, advice: stop, retried: true },
      ],
    })
    await until(() => registrar.acceptedItems().length === 1)
    assert.deepEqual(seen, ['skill:billing/x', 'skill:acme/x', 'skill:acme/x'], 'OUT_OF_SCOPE is not retried, FORBIDDEN is')
    assert.deepEqual(logger.at('error'), [`skills registry refused skill "billing/x" (OUT_OF_SCOPE): ${outside}; ${scope}`], 'logged once')
    assert.deepEqual(logger.at('warn'), [`skills registry refused skill "acme/x" (FORBIDDEN): ${held}; ${stop}`])
  })

  it('lets a held id block nothing and gives up on it saying what holds it', async () => {
    const held = 'skill "a/x" belongs to another worker (w1, named "other"); only the worker that registered it may register or unregister it while it is connected'
    let attempts = 0
    const { registrar, logger, events } = setup(async (i) => {
      if (i.key !== 'skill:a/x') return
      attempts++
      throw new InvocationFailure('FORBIDDEN', held)
    })
    for (const id of ['a/x', 'b', 'c']) registrar.upsert(item(id))
    const result = await registrar.start(fast({ giveUpMs: 40 }))
    assert.equal(result.registered, false)
    assert.deepEqual(result.rejected.map((r) => [r.name, r.code, r.holder?.workerName]), [['a/x', 'FORBIDDEN', 'other']])
    assert.deepEqual(registrar.acceptedItems().map((i) => i.key), ['skill:b', 'skill:c'])
    await until(() => events.gaveUp === 1)
    assert.ok(attempts >= 2, `the held id was tried ${attempts} time(s)`)
    assert.ok(!logger.at('warn').includes(GAVE_UP), 'the registry answered: not the handshake message')
    assert.equal(
      logger.at('warn').at(-1),
      'skills registration gave up while other workers hold skill "a/x"; stop them or publish under other ids, then restart this worker',
    )
    assert.equal(logger.at('warn').length, 2, 'the held id is logged once, then the give-up')
    assert.equal(events.registered, 0)
  })

  it('requestAll wakes a waiting run and registers everything again', async () => {
    let registryUp = false
    const seen: string[] = []
    const { registrar, events } = setup(async (i) => {
      seen.push(i.key)
      if (!registryUp) throw new InvocationFailure('function_not_found', 'not found')
    })
    registrar.upsert(item('a'))
    registrar.upsert(item('b'))
    const run = registrar.start(resolveBackoff({ initialMs: 3_600_000, giveUpMs: 7_200_000 }))
    await until(() => seen.length === 1)
    registryUp = true
    registrar.requestAll('skills registry is available again')
    assert.deepEqual(await run, { registered: true, rejected: [] })
    assert.deepEqual(seen, ['skill:a', 'skill:a', 'skill:b'])
    assert.equal(events.registered, 1)
  })

  it('requestAll after a finished run starts a new one that registers everything', async () => {
    const seen: string[] = []
    const { registrar, events, logger } = setup(async (i) => void seen.push(i.key))
    registrar.upsert(item('a'))
    registrar.upsert(item('b'))
    await registrar.start(fast())
    registrar.requestAll('engine connection re-established')
    await until(() => events.registered === 2)
    assert.deepEqual(seen, ['skill:a', 'skill:b', 'skill:a', 'skill:b'])
    assert.ok(logger.at('info').includes('engine connection re-established; registering skills and prompts again'))
  })

  it('registers an item added after start at once', async () => {
    const seen: string[] = []
    const { registrar, events } = setup(async (i) => void seen.push(i.key))
    registrar.upsert(item('a'))
    await registrar.start(fast())
    registrar.upsert(item('late'))
    await until(() => events.registered === 2)
    assert.deepEqual(seen, ['skill:a', 'skill:late'])
  })

  it('stop ends a waiting run with registered: false and no give-up warning', async () => {
    let attempts = 0
    const { registrar, logger, events } = setup(async () => {
      attempts++
      throw new InvocationFailure('TIMEOUT', 'timed out')
    })
    registrar.upsert(item('a'))
    const run = registrar.start(resolveBackoff({ initialMs: 3_600_000, giveUpMs: 7_200_000 }))
    await until(() => attempts === 1)
    registrar.stop()
    assert.deepEqual(await run, { registered: false, rejected: [] })
    assert.deepEqual(logger.at('warn'), [])
    assert.equal(events.gaveUp, 0)
    registrar.requestAll('ignored after stop')
    assert.equal(attempts, 1)
  })

  it('gives up on time even while a call is still waiting for its answer', async () => {
    let attempts = 0
    const { registrar, logger, events } = setup(() => {
      attempts++
      return new Promise(() => {}) // the engine never answers
    })
    registrar.upsert(item('a'))
    registrar.upsert(item('b'))
    assert.deepEqual(await registrar.start(fast({ giveUpMs: 20 })), { registered: false, rejected: [] })
    assert.deepEqual(logger.at('warn'), [GAVE_UP])
    assert.equal(events.gaveUp, 1)
    assert.equal(attempts, 1, 'the abandoned round makes no further calls')
  })

  it('stop interrupts a call that is still waiting for its answer', async () => {
    let attempts = 0
    const { registrar } = setup(() => {
      attempts++
      return new Promise(() => {})
    })
    registrar.upsert(item('a'))
    const run = registrar.start(resolveBackoff({ initialMs: 3_600_000, giveUpMs: 7_200_000 }))
    await until(() => attempts === 1)
    registrar.stop()
    assert.deepEqual(await run, { registered: false, rejected: [] })
  })

  it('requestAll during a hanging call starts over with everything', async () => {
    const seen: string[] = []
    let hang = true
    const { registrar } = setup((i) => {
      seen.push(i.key)
      return hang ? new Promise(() => {}) : Promise.resolve()
    })
    registrar.upsert(item('a'))
    registrar.upsert(item('b'))
    const run = registrar.start(resolveBackoff({ initialMs: 3_600_000, giveUpMs: 7_200_000 }))
    await until(() => seen.length === 1)
    hang = false
    registrar.requestAll('engine connection re-established')
    assert.deepEqual(await run, { registered: true, rejected: [] })
    assert.deepEqual(seen, ['skill:a', 'skill:a', 'skill:b'])
  })

  it('keeps track of what the registry accepted', async () => {
    const { registrar } = setup(async (i) => {
      if (i.key === 'skill:bad') throw new Error('skill must be non-empty')
    })
    registrar.upsert(item('ok'))
    registrar.upsert(item('bad'))
    await registrar.start(fast())
    assert.deepEqual(
      registrar.acceptedItems().map((i) => i.key),
      ['skill:ok'],
    )
  })
})
