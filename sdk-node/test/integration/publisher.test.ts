// The publisher against the real registry: bin/skills --standalone, started per suite.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { IIIClient } from 'iii-sdk'
import { z } from 'zod'
import { createPublisher, isNotFound, type PromptChange, type SkillChange } from '../../src/index.js'
import { MemoryLogger } from '../helpers/mock-client.js'
import { RegistryServer, eventually, freePort, testClient } from '../helpers/server.js'

const GAVE_UP = 'skills handshake gave up; install / start it and restart this worker'

type Json = Record<string, unknown>

async function call<T = Json>(iii: IIIClient, function_id: string, payload: unknown = {}): Promise<T> {
  return iii.trigger<unknown, T>({ function_id, payload, timeoutMs: 5000 })
}

async function skillIds(iii: IIIClient): Promise<string[]> {
  const { skills } = await call<{ skills: { id: string }[] }>(iii, 'skills::list')
  return skills.map((s) => s.id)
}

async function promptNames(iii: IIIClient): Promise<string[]> {
  const { prompts } = await call<{ prompts: { name: string }[] }>(iii, 'prompts::list')
  return prompts.map((p) => p.name)
}

async function read(iii: IIIClient, uri: string): Promise<{ mimeType: string; text: string }> {
  const { contents } = await call<{ contents: { mimeType: string; text: string }[] }>(iii, 'skills::resources-read', { uri })
  const first = contents[0]
  assert.ok(first, `no contents for ${uri}`)
  return first
}

const quick = { initialMs: 50, multiplier: 2, maxMs: 200, giveUpMs: 30_000 }

describe('publisher against bin/skills --standalone', () => {
  let server: RegistryServer
  let probe: IIIClient
  const clients: IIIClient[] = []

  before(async () => {
    server = await RegistryServer.start()
    probe = testClient(server.url, 'probe')
    clients.push(probe)
  })

  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await server?.dispose()
  })

  function client(name: string): IIIClient {
    const c = testClient(server.url, name)
    clients.push(c)
    return c
  }

  it('registers a nested tree, a section, prompts and a typed function', async () => {
    const iii = client('tree-publisher')
    const logger = new MemoryLogger()
    const pub = createPublisher(iii, { logger, backoff: quick })
    pub.skill('tree', '# tree\n\nRouter.\n\n- [`leaf`](iii://tree/leaf)\n')
    pub.skill('tree/leaf', '# tree/leaf\n\nThe leaf body.\n')
    const uri = pub.section('tree/health', () => ({ content: '# Tree health\n\nok' }))
    const stats = pub.section('tree/stats', () => ({ sent: 3 }))
    pub.prompt(
      {
        name: 'tree-mail',
        description: 'Compose an email',
        args: z.object({
          to: z.string().describe('Recipient address'),
          subject: z.string().describe('Subject line'),
          urgent: z.boolean().optional().describe('Mark as urgent'),
        }),
      },
      ({ to, subject, urgent }) => ({
        content: `Compose an email to ${to} with the subject "${subject}".${urgent ? ' Mark it urgent.' : ''}`,
      }),
    )
    pub.prompt(
      { name: 'tree-count', description: 'Limit words', args: z.object({ limit: z.int().describe('Maximum words') }) },
      ({ limit }) => `Use at most ${limit} words.`,
    )
    pub.function(
      'tree::echo',
      { input: z.object({ message: z.string(), repeat: z.int() }), output: z.object({ echo: z.string() }) },
      ({ message, repeat }) => ({ echo: message.repeat(repeat) }),
    )

    assert.deepEqual(await pub.start(), { registered: true, rejected: [] })
    const ids = await skillIds(probe)
    assert.ok(ids.includes('tree') && ids.includes('tree/leaf'), `skills::list: ${ids.join(', ')}`)
    assert.deepEqual((await promptNames(probe)).filter((n) => n.startsWith('tree-')).sort(), ['tree-count', 'tree-mail'])

    assert.equal((await read(probe, 'iii://tree/leaf')).text, '# tree/leaf\n\nThe leaf body.\n')
    assert.equal(uri, 'iii://fn/tree/health')
    assert.deepEqual(await read(probe, uri), { uri, mimeType: 'text/markdown', text: '# Tree health\n\nok' })
    const json = await read(probe, stats)
    assert.equal(json.mimeType, 'application/json')
    assert.deepEqual(JSON.parse(json.text), { sent: 3 })

    // The argument list the client sees comes from the zod object.
    const { prompts } = await call<{ prompts: { name: string; arguments: Json[] }[] }>(probe, 'prompts::mcp-list')
    assert.deepEqual(prompts.find((p) => p.name === 'tree-mail')?.arguments, [
      { name: 'to', description: 'Recipient address', required: true },
      { name: 'subject', description: 'Subject line', required: true },
      { name: 'urgent', description: 'Mark as urgent', required: false },
    ])

    // MCP sends strings; they are converted before the handler runs.
    const got = await call<{ messages: Json[] }>(probe, 'prompts::mcp-get', {
      name: 'tree-mail',
      arguments: { to: 'ada@example.com', subject: 'Hi', urgent: 'true' },
    })
    assert.deepEqual(got.messages, [
      {
        role: 'user',
        content: { type: 'text', text: 'Compose an email to ada@example.com with the subject "Hi". Mark it urgent.' },
      },
    ])
    const counted = await call<{ messages: { content: { text: string } }[] }>(probe, 'prompts::mcp-get', {
      name: 'tree-count',
      arguments: { limit: '42' },
    })
    assert.equal(counted.messages[0]?.content.text, 'Use at most 42 words.')

    await assert.rejects(
      call(probe, 'prompts::mcp-get', { name: 'tree-mail', arguments: { subject: 'Hi' } }),
      (err: Error) => err.message.includes('prompt "tree-mail": missing required argument "to"'),
    )
    await assert.rejects(
      call(probe, 'prompts::mcp-get', { name: 'tree-count', arguments: { limit: 'abc' } }),
      (err: Error) => err.message.includes('prompt "tree-count": argument "limit" must be an integer, got "abc"'),
    )

    // The typed function shows its contract and works.
    const info = await call<{ request_schema: Json; response_schema: Json }>(probe, 'engine::functions::info', {
      function_id: 'tree::echo',
    })
    assert.equal(info.request_schema['type'], 'object')
    assert.deepEqual(info.request_schema['required'], ['message', 'repeat'])
    assert.deepEqual(Object.keys(info.request_schema['properties'] as Json), ['message', 'repeat'])
    assert.equal(info.response_schema['type'], 'object')
    assert.deepEqual(info.response_schema['required'], ['echo'])
    assert.deepEqual(await call(probe, 'tree::echo', { message: 'ab', repeat: 3 }), { echo: 'ababab' })

    await pub.close({ unregister: true })
    assert.ok(!(await skillIds(probe)).some((id) => id === 'tree' || id.startsWith('tree/')))
    assert.ok(!(await promptNames(probe)).some((n) => n.startsWith('tree-')))
    await assert.rejects(call(probe, 'tree::echo', { message: 'a', repeat: 1 }))
  })

  it('delivers skills::on-change and prompts::on-change as typed events', async () => {
    const iii = client('subscriber')
    const pub = createPublisher(iii, { logger: new MemoryLogger(), backoff: quick })
    const skills: SkillChange[] = []
    const prompts: PromptChange[] = []
    pub.onSkillChange((c) => void skills.push(c))
    pub.onPromptChange((c) => void prompts.push(c))
    await pub.start()
    // The bindings reach the registry asynchronously: register until one event arrives.
    await eventually(
      async () => {
        await call(probe, 'skills::register', { id: 'events/probe', skill: '# probe' })
        return skills.some((c) => c.id === 'events/probe')
      },
      () => `no skills::on-change event arrived: ${JSON.stringify(skills)}`,
    )
    skills.length = 0
    await call(probe, 'skills::register', { id: 'events/x', skill: '# x' })
    await call(probe, 'skills::unregister', { id: 'events/x' })
    await call(probe, 'prompts::register', { name: 'events-p', description: 'd', function_id: 'nobody::here' })
    await call(probe, 'prompts::unregister', { name: 'events-p' })
    // Late copies of the probe events may still arrive: look at this test's ids only.
    const mine = () => skills.filter((c) => c.id === 'events/x')
    await eventually(
      () => mine().length >= 2 && prompts.length >= 2,
      () => `events so far: ${JSON.stringify({ skills, prompts })}`,
    )
    assert.deepEqual(mine(), [
      { op: 'register', id: 'events/x' },
      { op: 'unregister', id: 'events/x' },
    ])
    assert.deepEqual(prompts, [
      { op: 'register', name: 'events-p' },
      { op: 'unregister', name: 'events-p' },
    ])
    await pub.close()
  })

  it('passes message and author into the history and moves labels', async () => {
    const iii = client('versions-publisher')
    const pub = createPublisher(iii, { logger: new MemoryLogger(), backoff: quick })
    pub.skill('versioned/node', '# V1\n', { message: 'first cut', author: 'node-sdk' })
    pub.prompt({ name: 'versioned-node', description: 'd', message: 'prompt v1' }, () => 'x')
    assert.deepEqual(await pub.start(), { registered: true, rejected: [] })
    pub.skill('versioned/node', '# V2\n', { message: 'second cut' })
    await eventually(
      async () => (await pub.skillVersions('versioned/node')).latest === 2,
      () => 'the second version was not recorded',
    )
    const h = await pub.skillVersions('versioned/node')
    assert.equal(h.versions[0]?.message, 'second cut')
    assert.equal(h.versions[1]?.author, 'node-sdk')
    assert.deepEqual(h.versions[0]?.labels, ['latest'])
    const move = await pub.labelSkill('versioned/node', 'production', 1)
    assert.deepEqual(move, { id: 'versioned/node', label: 'production', version: 1 })
    assert.equal((await read(probe, 'iii://versioned/node@production')).text, '# V1\n')
    assert.equal((await pub.labelSkill('versioned/node', 'production', 'latest')).previous, 1)
    await assert.rejects(pub.labelSkill('versioned/node', 'latest', 1), /moved by the registry only/)
    // The registry's NOT_FOUND, told by its code: an unknown version or id.
    await assert.rejects(pub.labelSkill('versioned/node', 'canary', 9), (err) => isNotFound(err))
    await assert.rejects(pub.skillVersions('never/published'), (err) => isNotFound(err))
    const ph = await pub.promptVersions('versioned-node')
    assert.equal(ph.versions[0]?.message, 'prompt v1')
    assert.equal((await pub.labelPrompt('versioned-node', 'stable', 1)).version, 1)
    await pub.close()
  })

  it('lets an id another worker holds block nothing, names the holder, and takes the id once it is gone', async () => {
    const holderClient = testClient(server.url, 'resend-holder')
    const holder = createPublisher(holderClient, { logger: new MemoryLogger() })
    holder.skill('shared/doc', '# held\n')
    assert.deepEqual(await holder.start(), { registered: true, rejected: [] })

    const logger = new MemoryLogger()
    const pub = createPublisher(client('contender'), { logger, backoff: quick })
    let registered = 0
    pub.on('registered', () => void registered++)
    for (const id of ['mine/first', 'shared/doc', 'mine/after']) pub.skill(id, `# ${id}\n`)
    const result = await pub.start()
    assert.equal(result.registered, false)
    assert.equal(result.rejected.length, 1)
    const [held] = result.rejected
    assert.ok(held)
    assert.equal(held.name, 'shared/doc')
    assert.equal(held.code, 'FORBIDDEN')
    assert.equal(held.retried, true)
    assert.equal(held.holder?.workerName, `resend-holder:${process.pid}`)
    assert.match(held.holder?.workerId ?? '', /^[0-9a-f-]{36}$/)
    assert.equal(
      held.advice,
      `stop worker "resend-holder:${process.pid}" (${held.holder?.workerId}), which holds it, or publish under another id; this worker retries until its registration deadline`,
    )
    const ids = await skillIds(probe)
    assert.ok(ids.includes('mine/first') && ids.includes('mine/after'), `the items around the held id: ${ids.join(', ')}`)
    assert.ok(logger.at('warn').some((l) => l.startsWith('skills registry refused skill "shared/doc" (FORBIDDEN): ')))

    // The holder leaves: the retried id passes to this publisher.
    await holder.close()
    await holderClient.shutdown()
    await eventually(
      () => registered > 0,
      () => `the held id never passed to the publisher: ${logger.lines.map((l) => l.message).join('\n')}`,
    )
    assert.equal((await read(probe, 'iii://shared/doc')).text, '# shared/doc\n')
    await pub.close({ unregister: true })
  })

  it('refuses to serve a bad prompt call without running the handler', async () => {
    const iii = client('strict-prompt')
    const pub = createPublisher(iii, { logger: new MemoryLogger(), backoff: quick })
    let ran = 0
    pub.prompt({ name: 'strict-p', description: 'd', args: z.object({ n: z.int().min(1) }) }, ({ n }) => {
      ran++
      return `n=${n}`
    })
    await pub.start()
    await assert.rejects(
      call(probe, 'prompts::mcp-get', { name: 'strict-p', arguments: { n: '0' } }),
      (err: Error) => err.message.includes('prompt "strict-p": argument "n": '),
    )
    assert.equal(ran, 0)
    await pub.close({ unregister: true })
  })
})

describe('publisher lifecycle against bin/skills --standalone', () => {
  it('waits for a registry that starts after it, then registers', async () => {
    const port = await freePort()
    const iii = testClient(`ws://127.0.0.1:${port}`, 'early-publisher')
    const logger = new MemoryLogger()
    const pub = createPublisher(iii, { logger, backoff: quick, callTimeoutMs: 500 })
    pub.skill('early', '# early')
    const run = pub.start()
    let server: RegistryServer | undefined
    try {
      await eventually(
        () => logger.at('info').some((m) => m.startsWith('skills registration of skill "early" failed')),
        () => `no failed attempt was logged: ${JSON.stringify(logger.lines)}`,
      )
      server = await RegistryServer.start(port)
      assert.deepEqual(await run, { registered: true, rejected: [] })
      const probe = testClient(server.url, 'probe')
      try {
        assert.ok((await skillIds(probe)).includes('early'))
      } finally {
        await probe.shutdown()
      }
    } finally {
      await pub.close()
      await iii.shutdown()
      await server?.dispose()
    }
  })

  it('registers everything again after the engine restarts with empty state', async () => {
    const server = await RegistryServer.start()
    const iii = testClient(server.url, 'restart-publisher')
    const logger = new MemoryLogger()
    const pub = createPublisher(iii, { logger, backoff: quick, callTimeoutMs: 1000 })
    let registered = 0
    pub.on('registered', () => void registered++)
    pub.skill('phoenix', '# phoenix\n\nSurvives restarts.\n')
    pub.prompt({ name: 'phoenix-p', description: 'Rise' }, () => 'again')
    const probe = testClient(server.url, 'probe')
    try {
      assert.deepEqual(await pub.start(), { registered: true, rejected: [] })
      assert.equal(registered, 1)

      await server.stop()
      await server.spawn() // same port, new empty data directory
      // The probe can list both entries before the publisher has read the last acknowledgement,
      // so the second 'registered' event is part of what we wait for.
      await eventually(
        async () =>
          registered >= 2 &&
          (await skillIds(probe)).includes('phoenix') &&
          (await promptNames(probe)).includes('phoenix-p'),
        () => `not registered again after the restart (events: ${registered}); logs: ${JSON.stringify(logger.lines)}\n${server.log()}`,
      )
      assert.ok(
        logger.at('info').includes('engine connection re-established; registering skills and prompts again'),
        JSON.stringify(logger.lines),
      )
      const prompt = await call<{ messages: { content: { text: string } }[] }>(probe, 'prompts::mcp-get', {
        name: 'phoenix-p',
      })
      assert.equal(prompt.messages[0]?.content.text, 'again')
    } finally {
      await pub.close()
      await Promise.all([iii.shutdown(), probe.shutdown()])
      await server.dispose()
    }
  })

  it('gives up with the exact warning when no registry ever answers', async () => {
    const port = await freePort() // nothing listens here
    const iii = testClient(`ws://127.0.0.1:${port}`, 'lonely-publisher')
    const logger = new MemoryLogger()
    const pub = createPublisher(iii, {
      logger,
      backoff: { initialMs: 20, multiplier: 2, maxMs: 40, giveUpMs: 300 },
      callTimeoutMs: 50,
    })
    let gaveUp = 0
    pub.on('gaveUp', () => void gaveUp++)
    pub.skill('lonely', '# lonely')
    try {
      assert.deepEqual(await pub.start(), { registered: false, rejected: [] })
      assert.equal(gaveUp, 1)
      assert.deepEqual(logger.at('warn'), [GAVE_UP])
    } finally {
      await pub.close()
      await iii.shutdown()
    }
  })
})
