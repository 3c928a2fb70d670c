// Recursion through a publisher on the official iii-sdk client: its handlers
// do not pass invocation metadata on, but with OpenTelemetry enabled (the
// client's default) they pass the W3C baggage on, and the registry carries
// its section chain there. So a handler that fetches its own section is
// refused at once as a cycle, and a chain of sections stops at depth 8,
// instead of nesting 256 deep until the in-flight backstop trips.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type IIIClient } from 'iii-sdk'
import { RegistryServer, eventually, testClient } from '../helpers/server.js'

describe('section limits through the official Node client', () => {
  let server: RegistryServer
  let probe: IIIClient
  let publisher: IIIClient
  let selfCalls = 0

  before(async () => {
    server = await RegistryServer.start()
    probe = testClient(server.url, 'probe')
    publisher = registerWorker(server.url, {
      workerName: `depth-publisher:${process.pid}`,
      // OpenTelemetry on, as by default; no metrics or fetch patching.
      otel: { enabled: true, metricsEnabled: false, fetchInstrumentationEnabled: false },
      enableMetricsReporting: false,
    })
    const fetch = (uri: string) =>
      publisher.trigger({ function_id: 'skill::fetch', payload: { uri }, timeoutMs: 20_000 })
    publisher.registerFunction('nodedepth::self', async () => {
      selfCalls++
      return fetch('iii://fn/nodedepth/self')
    })
    for (let i = 0; i < 12; i++) {
      publisher.registerFunction(`nodedepth::s${i}`, async () => fetch(`iii://fn/nodedepth/s${i + 1}`))
    }
    await eventually(
      async () => {
        const out = await probe.trigger<unknown, { functions: { function_id: string }[] }>({
          function_id: 'engine::functions::list',
          payload: {},
          timeoutMs: 2000,
        })
        const ids = new Set(out.functions.map((f) => f.function_id))
        return ids.has('nodedepth::self') && ids.has('nodedepth::s11')
      },
      () => `the publisher's functions were not registered\n${server.log()}`,
    )
  })

  after(async () => {
    await publisher?.shutdown()
    await probe?.shutdown()
    await server?.dispose()
  })

  const fetchError = async (uri: string): Promise<string> => {
    try {
      await probe.trigger({ function_id: 'skill::fetch', payload: { uri }, timeoutMs: 30_000 })
    } catch (err) {
      return err instanceof Error ? err.message : String(err)
    }
    assert.fail(`skill::fetch ${uri} succeeded; want an error`)
  }

  it('refuses a handler that fetches its own section as a cycle, at once', async () => {
    const msg = await fetchError('iii://fn/nodedepth/self')
    assert.match(msg, /section cycle: iii:\/\/fn\/nodedepth\/self → iii:\/\/fn\/nodedepth\/self/)
    assert.equal(selfCalls, 1)
  })

  it('stops a chain of sections at depth 8', async () => {
    const msg = await fetchError('iii://fn/nodedepth/s0')
    assert.match(msg, /section nesting too deep: 9 nested section reads \(max 8\)/)
  })
})
