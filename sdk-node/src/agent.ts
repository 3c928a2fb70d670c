// The ssh-agent client of the publisher (the agent protocol: draft-miller-ssh-agent): it lists
// the agent's keys and asks it to sign, one message each way on a fresh connection. Signing
// happens where the publisher adds an item, which is synchronous, so the exchange runs in a
// worker thread while this thread waits on a shared buffer (Atomics.wait), bounded in time.
import { Worker } from 'node:worker_threads'

/** The agent protocol messages used here. */
export const AGENT = {
  FAILURE: 5,
  REQUEST_IDENTITIES: 11,
  IDENTITIES_ANSWER: 12,
  SIGN_REQUEST: 13,
  SIGN_RESPONSE: 14,
  RSA_SHA2_512: 4,
} as const

/** The largest answer read from an agent (a list of keys, a signature). */
export const MAX_AGENT_MESSAGE = 256 * 1024
/** How long one exchange with the agent may take, connecting included. */
export const AGENT_TIMEOUT_MS = 10_000

/** How an exchange failed: the agent could not be reached, or its answer was no answer. */
export class AgentError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'bad_answer',
    readonly reason: string,
  ) {
    super(reason)
  }
}

const HEADER = 12 // int32 state, int32 status, int32 length
const STATUS_OK = 1
const STATUS_UNREACHABLE = 2
const STATUS_BAD_ANSWER = 3

// Runs in the worker: one request out, one length-prefixed answer in, into the shared buffer.
const WORKER = `
const { workerData } = require('node:worker_threads')
const net = require('node:net')
const { socket, request, shared, max, timeoutMs } = workerData
const head = new Int32Array(shared, 0, 3)
const body = new Uint8Array(shared, ${HEADER})
let done = false
function finish(status, bytes) {
  if (done) return
  done = true
  body.set(bytes.subarray(0, body.length))
  head[1] = status
  head[2] = Math.min(bytes.length, body.length)
  Atomics.store(head, 0, 1)
  Atomics.notify(head, 0)
  conn.destroy()
}
const fail = (status, text) => finish(status, Buffer.from(text, 'utf8'))
let connected = false
let got = Buffer.alloc(0)
const conn = net.createConnection({ path: socket })
conn.setTimeout(timeoutMs, () =>
  connected ? fail(${STATUS_BAD_ANSWER}, 'no answer within ' + timeoutMs / 1000 + ' s') : fail(${STATUS_UNREACHABLE}, 'no connection within ' + timeoutMs / 1000 + ' s'))
conn.on('connect', () => {
  connected = true
  const len = Buffer.alloc(4)
  len.writeUInt32BE(request.length)
  conn.write(Buffer.concat([len, Buffer.from(request)]))
})
conn.on('data', (chunk) => {
  got = Buffer.concat([got, chunk])
  if (got.length < 4) return
  const n = got.readUInt32BE(0)
  if (n > max) return fail(${STATUS_BAD_ANSWER}, 'a message of ' + n + ' bytes, larger than the ' + max + ' allowed')
  if (got.length > 4 + n) return fail(${STATUS_BAD_ANSWER}, 'more bytes than the one message asked for')
  if (got.length === 4 + n) finish(${STATUS_OK}, got.subarray(4))
})
conn.on('end', () => fail(${STATUS_BAD_ANSWER}, 'the connection closed before a whole answer (' + got.length + ' bytes)'))
conn.on('error', (err) =>
  connected ? fail(${STATUS_BAD_ANSWER}, err.message) : fail(${STATUS_UNREACHABLE}, err.message))
`

/**
 * Sends `request` (one agent message: its type byte and contents) to the agent at `socket` and
 * returns its answer (type byte and contents); throws an AgentError.
 */
export function agentExchange(socket: string, request: Buffer): Buffer {
  const shared = new SharedArrayBuffer(HEADER + MAX_AGENT_MESSAGE)
  const head = new Int32Array(shared, 0, 3)
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { socket, request: new Uint8Array(request), shared, max: MAX_AGENT_MESSAGE, timeoutMs: AGENT_TIMEOUT_MS },
  })
  worker.unref()
  worker.on('error', () => {}) // a worker that failed leaves the state unset: reported below
  try {
    // The worker's own timer fires first; this bound holds if the worker never ran.
    Atomics.wait(head, 0, 0, AGENT_TIMEOUT_MS + 2_000)
    if (Atomics.load(head, 0) !== 1) throw new AgentError('bad_answer', `no answer within ${AGENT_TIMEOUT_MS / 1000} s`)
    const answer = Buffer.from(new Uint8Array(shared, HEADER, head[2] ?? 0))
    if (head[1] === STATUS_OK) {
      if (answer.length === 0) throw new AgentError('bad_answer', 'an empty message')
      return answer
    }
    const text = answer.toString('utf8')
    throw new AgentError(head[1] === STATUS_UNREACHABLE ? 'unreachable' : 'bad_answer', text)
  } finally {
    void worker.terminate()
  }
}
