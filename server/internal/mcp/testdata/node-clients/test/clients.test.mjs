// The official MCP TypeScript clients against `skills --standalone`'s MCP endpoint and
// against `skills mcp --stdio`: v2 @modelcontextprotocol/client (2026-07-28) and v1
// @modelcontextprotocol/sdk (2025-11-25).
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import { GUIDE_URI, LOGO, NESTED_SKILL_MD, READ_ONLY, connectClient, eventually, startPublisher, startStandalone } from './helpers.mjs'

const CASES = [
  { kind: 'v2', transport: 'http', version: '2026-07-28' },
  { kind: 'v2', transport: 'stdio', version: '2026-07-28' },
  { kind: 'v1', transport: 'http', version: '2025-11-25' },
  { kind: 'v1', transport: 'stdio', version: '2025-11-25' },
]

let server
let publisher

before(async () => {
  server = await startStandalone()
  publisher = await startPublisher(server.engineURL)
})

after(async () => {
  await publisher?.close()
  await server?.stop()
})

/** Errors of both SDK generations carry the JSON-RPC code as `code`. */
async function rejectsWith(promise, code, substring) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, code, `code of ${err}`)
    assert.match(String(err.message), new RegExp(substring.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    return true
  })
}

for (const c of CASES) {
  describe(`${c.kind} client over ${c.transport} (${c.version})`, () => {
    let mc
    before(async () => {
      mc = await connectClient(c.kind, c.transport, server)
    })
    after(async () => {
      await mc?.close()
    })

    test('negotiates the expected protocol revision', () => {
      assert.equal(mc.version, c.version)
    })

    test('resources/list: the index first, then every skill, nested included', async () => {
      const { resources } = await mc.client.listResources()
      const uris = resources.map((r) => r.uri)
      assert.equal(uris[0], 'iii://skills')
      for (const u of ['iii://nodedemo', 'iii://nodedemo/nested']) assert.ok(uris.includes(u), `${u} in ${uris}`)
      const demo = resources.find((r) => r.uri === 'iii://nodedemo')
      assert.equal(demo.name, 'Node demo')
      assert.equal(demo.mimeType, 'text/markdown')
    })

    test('resources/read: skills, nested skills, the index and iii://fn sections', async () => {
      for (const [uri, want] of [
        ['iii://nodedemo', 'How to use the node demo worker.'],
        ['iii://nodedemo/nested', 'A sub-skill.'],
        ['iii://skills', '(iii://nodedemo/nested) — Nested node demo — A sub-skill.'],
        ['iii://fn/nodedemo/echo', 'rendered by nodedemo::echo'],
      ]) {
        const { contents } = await mc.client.readResource({ uri })
        assert.equal(contents.length, 1)
        assert.equal(contents[0].uri, uri)
        assert.equal(contents[0].mimeType, 'text/markdown')
        assert.ok(contents[0].text.includes(want), `${uri}: ${contents[0].text}`)
      }
    })

    test('resources/read of an unknown skill is -32602 with the registry message', async () => {
      await rejectsWith(mc.client.readResource({ uri: 'iii://no-such-skill' }), -32602, 'Skill not found: no-such-skill')
    })

    test('resources/templates/list', async () => {
      const { resourceTemplates } = await mc.client.listResourceTemplates()
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['iii://{skill_id}', 'iii://fn/{function_path}'])
    })

    test('prompts/list and prompts/get', async () => {
      const { prompts } = await mc.client.listPrompts()
      const p = prompts.find((x) => x.name === 'nodegreet')
      assert.ok(p, JSON.stringify(prompts))
      assert.equal(p.description, 'Greets someone')
      assert.deepEqual(p.arguments, [{ name: 'to', description: 'Who to greet', required: true }])
      const res = await mc.client.getPrompt({ name: 'nodegreet', arguments: { to: 'alice@example.com' } })
      assert.equal(res.description, 'Greets someone')
      assert.deepEqual(res.messages, [{ role: 'user', content: { type: 'text', text: 'Say hello to alice@example.com' } }])
      await rejectsWith(mc.client.getPrompt({ name: 'no-such-prompt' }), -32602, 'Prompt not found: no-such-prompt')
    })

    test('tools/list: visible functions with "::" → "__", skill__fetch included, hidden ones not', async () => {
      const { tools } = await mc.client.listTools()
      const names = tools.map((t) => t.name)
      for (const n of ['skill__fetch', 'nodedemo__echo', 'nodedemo__fail', 'nodegreet__render']) assert.ok(names.includes(n), `${n} in ${names}`)
      for (const n of names) assert.ok(!/^(engine|state|stream|skills|prompts|mcp|iii|a2a)__/.test(n), `hidden tool ${n}`)
      const echo = tools.find((t) => t.name === 'nodedemo__echo')
      assert.equal(echo.description, 'Echoes its input')
      assert.deepEqual(echo.inputSchema, { type: 'object', properties: { text: { type: 'string' } } })
    })

    test('tools/call: results, failures as isError, hidden functions refused', async () => {
      const ok = await mc.client.callTool({ name: 'nodedemo__echo', arguments: { text: 'hi' } })
      assert.ok(!ok.isError)
      assert.deepEqual(ok.structuredContent, { echo: { text: 'hi' } })
      assert.equal(ok.content[0].text, '{\n  "echo": {\n    "text": "hi"\n  }\n}')

      const fetched = await mc.client.callTool({ name: 'skill__fetch', arguments: { uris: ['iii://nodedemo', 'iii://nodedemo/nested'] } })
      assert.ok(!fetched.isError)
      assert.ok(fetched.content[0].text.startsWith('# iii://nodedemo\n\n# Node demo'), fetched.content[0].text)

      const failed = await mc.client.callTool({ name: 'nodedemo__fail', arguments: {} })
      assert.equal(failed.isError, true)
      assert.match(failed.content[0].text, /nodedemo failure: the widget is broken/)

      const hidden = await mc.client.callTool({ name: 'state__get', arguments: { scope: 'skills', key: 'nodedemo' } })
      assert.equal(hidden.isError, true)
      assert.match(hidden.content[0].text, /internal namespace/)
    })

    test('side-effect tools are not exposed by default; hidden sections are refused on every read path', async () => {
      const { tools } = await mc.client.listTools()
      const names = tools.map((t) => t.name)
      for (const n of ['directory__skills__download', 'directory__registry__workers__list', 'nodeops__purge']) assert.ok(!names.includes(n), `${n} listed by default`)
      const fetch = tools.find((t) => t.name === 'directory__skills__fetch-skill')
      assert.equal(fetch.annotations.readOnlyHint, true)
      assert.equal(fetch.annotations.openWorldHint, false)
      for (const name of ['directory__skills__download', 'nodeops__purge']) {
        const res = await mc.client.callTool({ name, arguments: { repo: 'https://127.0.0.1:1/r.git', skill: 'x' } })
        assert.equal(res.isError, true, name)
        assert.match(res.content[0].text, /has side effects .* --(mcp-)?allow-side-effects/, name)
      }
      for (const uri of ['iii://fn/state/list_groups', 'fn/state/list_groups', 'iii://fn/engine/workers/list']) {
        for (const name of ['directory__skills__fetch-skill', 'skill__fetch']) {
          const res = await mc.client.callTool({ name, arguments: { uris: ['iii://fn/nodedemo/echo', uri] } })
          assert.equal(res.isError, true, `${name} ${uri}`)
          assert.match(res.content[0].text, /is in an internal namespace and cannot back a skill resource/, `${name} ${uri}`)
        }
      }
      await assert.rejects(mc.client.readResource({ uri: 'iii://fn/state/list_groups' }), /internal namespace/)
    })

    test('list_changed within a second of a skills::register by another worker', async () => {
      const id = `live-${c.kind}-${c.transport}`
      const before = mc.count('notifications/resources/list_changed')
      await publisher.trigger('skills::register', { id, skill: `# Live ${id}\n` })
      await eventually(() => mc.count('notifications/resources/list_changed') > before,
        () => `resources/list_changed after skills::register (seen: ${JSON.stringify([...mc.seen])})`, 1000)
      await eventually(() => (mc.seen.get('notifications/resources/updated') ?? []).some((p) => p.uri === 'iii://skills'),
        () => 'resources/updated for iii://skills', 1000)
      const { resources } = await mc.client.listResources()
      assert.ok(resources.some((r) => r.uri === `iii://${id}`))

      const prompts = mc.count('notifications/prompts/list_changed')
      await publisher.trigger('prompts::register', { name: id, description: 'live', function_id: 'nodegreet::render' })
      await eventually(() => mc.count('notifications/prompts/list_changed') > prompts, () => 'prompts/list_changed', 1000)

      await publisher.trigger('skills::unregister', { id })
      await publisher.trigger('prompts::unregister', { name: id })
    })

    test('skill://: every listed digest is the sha256 of the bytes resources/read serves; a change is resources/updated', async () => {
      const listed = await mc.client.callTool({ name: 'list_skills', arguments: {} })
      const skills = listed.structuredContent.skills
      const byUri = Object.fromEntries(skills.map((sk) => [sk.uri, sk]))
      assert.equal(byUri['skill://nodedemo/SKILL.md'].resources, 'dynamic', 'nodedemo links to iii://fn/nodedemo/echo')
      const nested = byUri[NESTED_SKILL_MD]
      assert.deepEqual(nested.frontmatter, { name: 'nested', description: 'A sub-skill.' })
      assert.ok(Array.isArray(nested.resources) && nested.resources.length === 1, JSON.stringify(nested))
      for (const f of nested.resources) {
        const { contents } = await mc.client.readResource({ uri: f.uri })
        const bytes = contents[0].blob !== undefined ? Buffer.from(contents[0].blob, 'base64') : Buffer.from(contents[0].text, 'utf8')
        assert.equal(bytes.length, f.size, f.uri)
        assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, f.digest, f.uri)
      }
      if (c.transport === 'http') {
        // The extension method itself, beside the tool, answers the same entries.
        const res = await fetch(server.endpoint, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${server.token}`, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'skills/list' },
          // A 2026-07-28 request carries the protocol _meta instead of initialize.
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'skills/list', params: { _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          } } }),
        })
        // go-sdk answers as JSON or as one SSE event, as for its own methods.
        const text = await res.text()
        const data = res.headers.get('content-type')?.startsWith('text/event-stream')
          ? text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => l.slice('data: '.length))[0]
          : text
        const body = JSON.parse(data)
        assert.equal(body.result.resultType, 'complete', text)
        assert.deepEqual(body.result.skills.find((sk) => sk.uri === NESTED_SKILL_MD), nested)
        assert.equal(nested._meta['io.iii-skills/origin'], 'published', 'each listing marks its origin')
      }
      const before = (mc.seen.get('notifications/resources/updated') ?? []).filter((p) => p.uri === NESTED_SKILL_MD).length
      await publisher.trigger('skills::register', { id: 'nodedemo/nested', skill: '# Nested node demo\n\nA sub-skill.\n' })
      await eventually(() => (mc.seen.get('notifications/resources/updated') ?? []).filter((p) => p.uri === NESTED_SKILL_MD).length > before,
        () => `resources/updated for ${NESTED_SKILL_MD} (seen: ${JSON.stringify([...mc.seen])})`, 2000)
    })

    test('skill:// folder skill: SKILL.md, a binary asset and a reference, each digest verified; a file edit is resources/updated', async () => {
      const listed = await mc.client.callTool({ name: 'list_skills', arguments: {} })
      const pdf = listed.structuredContent.skills.find((sk) => sk.uri === 'skill://acme/pdf-tools/SKILL.md')
      assert.ok(pdf, JSON.stringify(listed.structuredContent))
      assert.deepEqual(pdf.resources.map((f) => f.uri), ['skill://acme/pdf-tools/SKILL.md', 'skill://acme/pdf-tools/assets/logo.png', GUIDE_URI])
      for (const f of pdf.resources) {
        const { contents } = await mc.client.readResource({ uri: f.uri })
        const bytes = contents[0].blob !== undefined ? Buffer.from(contents[0].blob, 'base64') : Buffer.from(contents[0].text, 'utf8')
        assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, f.digest, f.uri)
        assert.equal(bytes.length, f.size, f.uri)
        if (f.uri.endsWith('.png')) {
          assert.equal(contents[0].mimeType, 'image/png')
          assert.deepEqual(bytes, LOGO)
        }
      }
      const updates = () => (mc.seen.get('notifications/resources/updated') ?? []).filter((p) => p.uri === GUIDE_URI).length
      const before = updates()
      writeFileSync(join(server.skillsFolder, 'acme', 'pdf-tools', 'references', 'guide.md'), `# Guide\n\nEdited for ${c.kind} ${c.transport}.\n`)
      await eventually(() => updates() > before, () => `resources/updated for ${GUIDE_URI} (seen: ${JSON.stringify([...mc.seen])})`, 5000)
      const again = await mc.client.callTool({ name: 'list_skills', arguments: {} })
      const guide = again.structuredContent.skills.find((sk) => sk.uri === 'skill://acme/pdf-tools/SKILL.md').resources.find((f) => f.uri === GUIDE_URI)
      const { contents } = await mc.client.readResource({ uri: GUIDE_URI })
      assert.equal(`sha256:${createHash('sha256').update(Buffer.from(contents[0].text, 'utf8')).digest('hex')}`, guide.digest)
      assert.ok(contents[0].text.includes(`Edited for ${c.kind} ${c.transport}.`))
    })

    test('tools/list_changed when a function appears', async () => {
      const before = mc.count('notifications/tools/list_changed')
      const fid = `nodelate::${c.kind}_${c.transport}`
      const ref = publisher.worker.registerFunction(fid, async () => 'late', { metadata: READ_ONLY })
      try {
        await eventually(() => mc.count('notifications/tools/list_changed') > before, () => 'tools/list_changed', 5000)
        const { tools } = await mc.client.listTools()
        assert.ok(tools.some((t) => t.name === fid.replace('::', '__')))
      } finally {
        ref.unregister()
      }
    })
  })
}
