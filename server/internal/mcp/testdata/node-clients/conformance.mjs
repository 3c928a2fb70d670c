// Runs the official MCP server conformance suite (@modelcontextprotocol/conformance)
// against a freshly started `skills --standalone` MCP endpoint.
//
// The suite's scenarios call fixture tools and prompts by name (test_simple_text,
// test_simple_prompt, …). The registry serves whatever iii workers publish, so a
// fixture worker publishes those that an iii function can express: tools are plain
// functions, prompts are registered with prompts::register and rendered by handler
// functions. Scenarios that need what the registry does not have (test:// resources,
// server→client requests during a call, non-text tool content) are listed with their
// reasons in conformance-baseline.yml; the suite fails on any other failure, and on a
// baseline entry that starts passing.
//
// The suite needs Node ≥ 22 (fs.globSync); the `node` package in this project provides
// one when the machine's node is older.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { registerWorker } from 'iii-sdk'

import { eventually, startStandalone } from './test/helpers.mjs'

const here = fileURLToPath(new URL('.', import.meta.url))
const suite = join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js')
const baseline = join(here, 'conformance-baseline.yml')

function node22() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath
  const bundled = join(here, 'node_modules', '.bin', 'node')
  if (!existsSync(bundled)) throw new Error('the conformance suite needs Node >= 22: run `npm ci` here (it installs the `node` package)')
  return bundled
}

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='

/** Publishes the suite's fixtures that an iii worker can provide. */
async function publishFixtures(engineURL) {
  const worker = registerWorker(engineURL, {
    workerName: `mcp-conformance-fixtures:${process.pid}`,
    otel: { enabled: false },
    enableMetricsReporting: false,
  })
  const trigger = (function_id, payload) => worker.trigger({ function_id, payload, timeoutMs: 10_000 })
  await eventually(() => trigger('skills::list', {}).then(() => true), () => 'registry reachable', 30_000)

  // The fixtures declare themselves read-only: MCP exposes only such tools by default.
  const metadata = { mcp: { readOnlyHint: true, openWorldHint: false } }
  worker.registerFunction('test_simple_text', async () => 'This is a simple text response for testing.', {
    description: 'Returns a simple text response',
    request_format: { type: 'object', properties: {} },
    metadata,
  })
  worker.registerFunction('test_error_handling', async () => {
    throw new Error('This tool intentionally returns an error for testing')
  }, { description: 'Always fails', request_format: { type: 'object', properties: {} }, metadata })
  worker.registerFunction('json_schema_2020_12_tool', async (input) => ({ received: input }), {
    description: 'Tool with JSON Schema 2020-12 features',
    metadata,
    request_format: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
  })

  const text = (t) => ({ role: 'user', content: { type: 'text', text: t } })
  const handler = { description: 'Renders a conformance fixture prompt' }
  worker.registerFunction('conformance::simple-prompt', async () => 'This is a simple prompt for testing.', handler)
  worker.registerFunction('conformance::prompt-with-arguments', async (a) => ({
    messages: [text(`Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'`)],
  }), handler)
  worker.registerFunction('conformance::prompt-with-embedded-resource', async (a) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      text('Please process the embedded resource above.'),
    ],
  }), handler)
  worker.registerFunction('conformance::prompt-with-image', async () => ({
    messages: [{ role: 'user', content: { type: 'image', data: PNG_1PX, mimeType: 'image/png' } }, text('Please analyze the image above.')],
  }), handler)
  await eventually(async () => (await trigger('engine::functions::list', { search: 'conformance::' })).functions.length === 4,
    () => 'fixture functions registered')

  const prompt = (name, description, function_id, args = []) =>
    trigger('prompts::register', { name, description, function_id, arguments: args })
  await prompt('test_simple_prompt', 'A simple prompt', 'conformance::simple-prompt')
  await prompt('test_prompt_with_arguments', 'A prompt with arguments', 'conformance::prompt-with-arguments', [
    { name: 'arg1', description: 'First test argument', required: true },
    { name: 'arg2', description: 'Second test argument', required: true },
  ])
  await prompt('test_prompt_with_embedded_resource', 'A prompt with an embedded resource', 'conformance::prompt-with-embedded-resource', [
    { name: 'resourceUri', description: 'URI of the resource to embed', required: true },
  ])
  await prompt('test_prompt_with_image', 'A prompt with an image', 'conformance::prompt-with-image')
  await trigger('skills::register', { id: 'conformance', skill: '# Conformance fixtures\n\nTools and prompts the MCP conformance suite calls.\n' })
  return worker
}

/** Every check of every scenario, from the suite's checks.json files. */
function readChecks(dir) {
  const rows = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name, 'checks.json')
    if (!entry.isDirectory() || !existsSync(file)) continue
    const scenario = entry.name.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '')
    for (const c of JSON.parse(readFileSync(file, 'utf8'))) rows.push({ scenario, id: c.id, status: c.status, error: c.errorMessage })
  }
  return rows.sort((a, b) => a.scenario.localeCompare(b.scenario) || a.id.localeCompare(b.id))
}

const server = await startStandalone({ token: '' })
let worker
let code = 1
let out
try {
  worker = await publishFixtures(server.engineURL)
  out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'))
  // Asynchronous on purpose: the fixture worker in this process must keep answering.
  const run = await new Promise((resolve, reject) => {
    const child = spawn(node22(), [suite, 'server', '--url', server.endpoint, '--suite', 'all', '--expected-failures', baseline, '-o', out],
      { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
    child.on('error', reject)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr })
    })
  })
  if (process.env.CONFORMANCE_VERBOSE) process.stdout.write(run.stdout + run.stderr)
  const rows = readChecks(out)
  const scenarios = new Map()
  for (const r of rows) {
    const s = scenarios.get(r.scenario) ?? { passed: 0, failed: 0, warnings: 0, failures: [] }
    if (r.status === 'SUCCESS') s.passed++
    else if (r.status === 'FAILURE') {
      s.failed++
      s.failures.push(`${r.id}: ${r.error ?? ''}`)
    } else if (r.status === 'WARNING') s.warnings++
    scenarios.set(r.scenario, s)
  }
  const expected = new Set(readFileSync(baseline, 'utf8').split('\n').map((l) => l.match(/^\s+-\s+(\S+)/)?.[1]).filter(Boolean))
  console.log(`MCP server conformance (@modelcontextprotocol/conformance) against ${server.endpoint}`)
  for (const [name, s] of scenarios) {
    const mark = s.failed === 0 && s.warnings === 0 ? 'pass ' : expected.has(name) ? 'xfail' : 'FAIL '
    console.log(`  ${mark}  ${name}  (${s.passed} checks passed${s.failed ? `, ${s.failed} failed` : ''}${s.warnings ? `, ${s.warnings} warnings` : ''})`)
    for (const f of s.failures) console.log(`          ${f.slice(0, 200)}`)
  }
  const plain = run.stdout.replace(/\x1b\[[0-9;]*m/g, '').split('\n')
  for (const l of plain.filter((x) => /Baseline|Unexpected|stale/.test(x))) console.log(l)
  code = run.status ?? 1
  const clean = [...scenarios.values()].filter((s) => s.failed === 0 && s.warnings === 0).length
  console.log(code === 0
    ? `MCP conformance: ${clean} of ${scenarios.size} scenarios clean; the others are the expected ones of conformance-baseline.yml`
    : `MCP conformance: unexpected results, exit ${code} (results in ${out}; CONFORMANCE_VERBOSE=1 shows the suite's output)\n${run.stderr}`)
} finally {
  await worker?.shutdown()
  await server.stop()
  // The suite's results are read above; a failing run keeps them for a look
  // (the path is printed), a passing one leaves nothing behind in the temp dir.
  if (out && code === 0 && !process.env.CONFORMANCE_KEEP) rmSync(out, { recursive: true, force: true })
}
process.exit(code)
