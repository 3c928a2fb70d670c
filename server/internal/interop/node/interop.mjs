// Interop script for the official Node iii-sdk against our embedded engine.
// interop_test.go runs it with III_URL set, reads the JSON lines it prints on
// stdout and plays the Go side (functions go::echo / go::done, trigger type
// go::ticks). Any failed expectation exits non-zero with the reason on stderr.
import assert from 'node:assert/strict'
import { registerWorker } from 'iii-sdk'

const url = process.env.III_URL
if (!url) throw new Error('III_URL is not set')
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms))])

const iii = registerWorker(url, { workerName: 'interop-node' })

// A function the Go worker calls.
iii.registerFunction('node::echo', async (data) => ({ from: 'node', got: data }), {
  description: 'Echo the payload back, tagged with the runtime',
})

// The target of a trigger bound to the Go worker's trigger type.
let gotTick
const tick = new Promise((resolve) => (gotTick = resolve))
iii.registerFunction('node::on-tick', async (data) => {
  gotTick(data)
  return null
})

try {
  // Call a function the Go worker registered.
  const echoed = await iii.trigger({ function_id: 'go::echo', payload: { msg: 'hi from node' }, timeoutMs: 10000 })
  assert.equal(echoed.from, 'go')
  assert.equal(echoed.got.msg, 'hi from node')

  // Bind a trigger to a trigger type the Go worker provides.
  iii.registerTrigger({ type: 'go::ticks', function_id: 'node::on-tick', config: { label: 'node' } })

  // State round trip through the engine's built-ins.
  const value = { n: 1, text: 'é ✓', nested: { list: [1, 2, 3] } }
  const set = await iii.trigger({ function_id: 'state::set', payload: { scope: 'interop-node', key: 'k1', value } })
  assert.deepEqual(set.new_value, value)
  assert.deepEqual(await iii.trigger({ function_id: 'state::get', payload: { scope: 'interop-node', key: 'k1' } }), value)
  assert.equal(await iii.trigger({ function_id: 'state::get', payload: { scope: 'interop-node', key: 'missing' } }), undefined)
  const listed = await iii.trigger({ function_id: 'state::list', payload: { scope: 'interop-node' } })
  assert.deepEqual(listed, [value])

  say({ step: 'ready' })
  const fired = await withTimeout(tick, 15000, 'the go::ticks trigger to fire')
  assert.equal(fired.tick, 1)
  await iii.trigger({ function_id: 'go::done', payload: { runtime: 'node', tick: fired.tick }, timeoutMs: 10000 })
  say({ step: 'done' })
  await iii.shutdown()
  process.exit(0)
} catch (err) {
  process.stderr.write(`interop-node failed: ${err?.stack ?? err}\n`)
  process.exit(1)
}
