// How a refused register call is read, shared with the Go and Python publishers
// (conformance/vectors/refusals.json): verdict, holder, advice and log line per case.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { gaveUpHeldMessage, refusalOf, rejectionLine } from '../../src/refusal.js'
import { InvocationFailure } from '../helpers/mock-client.js'

interface Case {
  kind: 'skill' | 'prompt'
  name: string
  code: string
  message: string
  verdict: 'rejected' | 'held' | 'transient'
  holder?: { worker_id: string; worker_name?: string } | null
  advice?: string
  line?: string
}

const file = JSON.parse(
  readFileSync(new URL('../../../conformance/vectors/refusals.json', import.meta.url), 'utf8'),
) as { refusal: Case[]; gave_up_held: { held: { kind: 'skill' | 'prompt'; name: string }[]; message: string }[] }

describe('refusals (shared vectors)', () => {
  it('has the shared cases', () => assert.ok(file.refusal.length >= 15 && file.gave_up_held.length >= 2))
  file.refusal.forEach((c, i) => {
    it(`case ${i}: ${c.code} ${c.message.slice(0, 60)}`, () => {
      const item = { key: `${c.kind}:${c.name}`, label: `${c.kind} ${JSON.stringify(c.name)}`, kind: c.kind, name: c.name }
      // iii-sdk's InvocationError carries the code and puts it in front of the message.
      const r = refusalOf(item, new InvocationFailure(c.code, c.message))
      if (c.verdict === 'transient') {
        assert.equal(r, undefined)
        return
      }
      assert.ok(r !== undefined, 'read as a refusal')
      assert.equal(r.retried ? 'held' : 'rejected', c.verdict)
      assert.equal(r.code, c.code)
      assert.equal(r.message, c.message)
      const holder = c.holder ?? undefined
      assert.deepEqual(
        r.holder,
        holder === undefined
          ? undefined
          : { workerId: holder.worker_id, ...(holder.worker_name === undefined ? {} : { workerName: holder.worker_name }) },
      )
      assert.equal(r.advice, c.advice)
      assert.equal(rejectionLine(r), c.line)
    })
  })
  for (const c of file.gave_up_held) {
    it(`gives up while ${c.held.map((h) => h.name).join(', ')} are held`, () => {
      assert.equal(gaveUpHeldMessage(c.held), c.message)
    })
  }
})
