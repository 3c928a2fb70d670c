// Shared fixture of the Node client tests: a real `skills --standalone` (with its MCP
// endpoint on a free loopback port and a bearer token), a publisher worker built on the
// official iii-sdk, and the two official MCP TypeScript clients behind one small adapter.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { registerWorker } from 'iii-sdk'
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'

export const repoRoot = fileURLToPath(new URL('../../../../../../', import.meta.url))
export const TOKEN = 'node-client-secret'

export function skillsBinary() {
  const bin = process.env.SKILLS_BIN ?? join(repoRoot, 'bin', 'skills')
  if (!existsSync(bin)) throw new Error(`${bin} does not exist: run \`make build\` (or set SKILLS_BIN)`)
  return bin
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Polls probe until it holds; fails with what() after limitMs. */
export async function eventually(probe, what, limitMs = 5000) {
  const deadline = Date.now() + limitMs
  let last
  for (;;) {
    try {
      if (await probe()) return
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`not within ${limitMs} ms: ${what()}${last ? ` (last error: ${last})` : ''}`)
    await sleep(10)
  }
}

/**
 * Starts `skills --standalone` with `--mcp-addr 127.0.0.1:<free>` and `--mcp-token`,
 * or, when MCP_URL/III_URL are set, uses that running server instead.
 */
export async function startStandalone({ token = TOKEN } = {}) {
  if (process.env.MCP_URL && process.env.III_URL) {
    return { engineURL: process.env.III_URL, endpoint: process.env.MCP_URL, token: process.env.SKILLS_MCP_TOKEN ?? '', log: () => '', stop: async () => {} }
  }
  const bin = skillsBinary()
  const [enginePort, mcpPort] = [await freePort(), await freePort()]
  const data = mkdtempSync(join(tmpdir(), 'skills-mcp-node-'))
  const engineURL = `ws://127.0.0.1:${enginePort}`
  const skillsFolder = writeFolderSkill(join(data, 'skills'))
  const args = ['--standalone', '--url', engineURL, '--data', data, '--config', join(data, 'none.yaml'), '--mcp-addr', `127.0.0.1:${mcpPort}`,
    '--skills-folder', skillsFolder]
  if (token) args.push('--mcp-token', token)
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKILLS_MCP_TOKEN: '' } })
  let output = ''
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  let exited = null
  child.once('exit', (code) => (exited = code ?? -1))
  const endpoint = `http://127.0.0.1:${mcpPort}/mcp`
  await eventually(() => {
    if (exited !== null) throw new Error(`skills exited with ${exited}`)
    return output.includes(`MCP endpoint ${endpoint}`)
  }, () => `no "MCP endpoint ${endpoint}" line\n--- server output ---\n${output}`, 30_000)
  return {
    engineURL,
    endpoint,
    token,
    skillsFolder,
    log: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const t = setTimeout(() => child.kill('SIGKILL'), 5000)
        await gone
        clearTimeout(t)
      }
      rmSync(data, { recursive: true, force: true })
    },
  }
}

/** Registration metadata of a function that declares itself read-only, so MCP exposes it by default. */
export const READ_ONLY = { mcp: { readOnlyHint: true, openWorldHint: false } }

/** A second worker (official iii-sdk) that publishes the fixture and makes changes. */
export async function startPublisher(engineURL) {
  const worker = registerWorker(engineURL, {
    workerName: `node-mcp-publisher:${process.pid}`,
    otel: { enabled: false },
    enableMetricsReporting: false,
    reconnectionConfig: { initialDelayMs: 50, maxDelayMs: 250, jitterFactor: 0 },
  })
  const trigger = (function_id, payload) => worker.trigger({ function_id, payload, timeoutMs: 10_000 })
  await eventually(() => trigger('skills::list', {}).then(() => true), () => 'registry reachable', 30_000)

  worker.registerFunction('nodedemo::echo', async (input) => {
    const { _caller_worker_id, ...rest } = input ?? {}
    return Object.keys(rest).length === 0 ? '# Echo section\n\nrendered by nodedemo::echo' : { echo: rest }
  }, {
    description: 'Echoes its input',
    request_format: { type: 'object', properties: { text: { type: 'string' } } },
    metadata: READ_ONLY,
  })
  worker.registerFunction('nodedemo::fail', async () => {
    throw new Error('nodedemo failure: the widget is broken')
  }, { description: 'Always fails', metadata: READ_ONLY })
  worker.registerFunction('nodegreet::render', async (input) => ({ content: `Say hello to ${input?.to}` }), {
    description: 'Renders the greet prompt',
    metadata: READ_ONLY,
  })
  // Declares nothing: MCP does not expose it unless the operator allows side effects.
  worker.registerFunction('nodeops::purge', async () => 'purged', { description: 'Deletes everything' })
  await eventually(async () => {
    const out = await trigger('engine::functions::list', { prefix: 'node' })
    return out.functions.length === 4
  }, () => 'fixture functions registered')

  await trigger('skills::register', { id: 'nodedemo', skill: '# Node demo\n\nHow to use the node demo worker.\n\nSee [echo](iii://fn/nodedemo/echo).\n' })
  await trigger('skills::register', { id: 'nodedemo/nested', skill: '# Nested node demo\n\nA sub-skill.\n' })
  await trigger('prompts::register', {
    name: 'nodegreet', description: 'Greets someone', function_id: 'nodegreet::render',
    arguments: [{ name: 'to', description: 'Who to greet', required: true }],
  })
  return { worker, trigger, close: () => worker.shutdown() }
}

/** A binary supporting file of the folder skill acme/pdf-tools. */
export const LOGO = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe, 0x00, 0x01])
export const GUIDE_URI = 'skill://acme/pdf-tools/references/guide.md'

/** Writes an Agent Skills folder skill (SKILL.md, a binary asset, a reference) under root. */
function writeFolderSkill(root) {
  const dir = join(root, 'acme', 'pdf-tools')
  mkdirSync(join(dir, 'assets'), { recursive: true })
  mkdirSync(join(dir, 'references'), { recursive: true })
  writeFileSync(join(dir, 'SKILL.md'), '---\nname: pdf-tools\ndescription: Fill and merge PDF forms\n---\n\n# PDF tools\n\nSee [the guide](references/guide.md).\n')
  writeFileSync(join(dir, 'assets', 'logo.png'), LOGO)
  writeFileSync(join(dir, 'references', 'guide.md'), '# Guide\n')
  return root
}

/** The SKILL.md the registry synthesizes for the published skill nodedemo/nested. */
export const NESTED_SKILL_MD = 'skill://nodedemo/nested/SKILL.md'

const NOTIFICATIONS = [
  ['notifications/resources/list_changed', ResourceListChangedNotificationSchema],
  ['notifications/prompts/list_changed', PromptListChangedNotificationSchema],
  ['notifications/tools/list_changed', ToolListChangedNotificationSchema],
  ['notifications/resources/updated', ResourceUpdatedNotificationSchema],
]

/**
 * Connects one official client. kind: 'v2' (@modelcontextprotocol/client, negotiates
 * 2026-07-28) or 'v1' (@modelcontextprotocol/sdk, 2025-11-25); transport: 'http' | 'stdio'.
 * Every notification received is recorded in `seen` (method → params[]).
 */
export async function connectClient(kind, transport, server) {
  const seen = new Map()
  const negotiated = {}
  const note = (method, params) => seen.set(method, [...(seen.get(method) ?? []), params ?? {}])
  const headers = { Authorization: `Bearer ${server.token}` }
  const stdio = { command: skillsBinary(), args: ['mcp', '--stdio', '--url', server.engineURL, '--log-level', 'warn'], stderr: 'ignore' }
  let client
  if (kind === 'v2') {
    client = new ClientV2({ name: 'node-v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } })
    for (const [method] of NOTIFICATIONS) client.setNotificationHandler(method, (n) => note(method, n.params))
    await client.connect(transport === 'http' ? new HttpV2(new URL(server.endpoint), { requestInit: { headers } }) : new StdioV2(stdio))
    await client.listen({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['iii://skills', NESTED_SKILL_MD, GUIDE_URI] })
  } else {
    client = new ClientV1({ name: 'node-v1-test', version: '1.0.0' })
    for (const [method, schema] of NOTIFICATIONS) client.setNotificationHandler(schema, (n) => note(method, n.params))
    const t = transport === 'http' ? new HttpV1(new URL(server.endpoint), { requestInit: { headers } }) : new StdioV1(stdio)
    await client.connect(captureInitialize(t, negotiated))
    await client.subscribeResource({ uri: 'iii://skills' })
    await client.subscribeResource({ uri: NESTED_SKILL_MD })
    await client.subscribeResource({ uri: GUIDE_URI })
  }
  const version = kind === 'v2' ? client.getNegotiatedProtocolVersion() : negotiated.version
  return { client, seen, version, count: (m) => (seen.get(m) ?? []).length, close: () => client.close() }
}

/** Records the protocolVersion of the initialize result the v1 client receives. */
function captureInitialize(transport, box) {
  let handler
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler = h && ((msg, extra) => {
        if (typeof msg?.result?.protocolVersion === 'string') box.version = msg.result.protocolVersion
        return h(msg, extra)
      })
    },
  })
  return transport
}
