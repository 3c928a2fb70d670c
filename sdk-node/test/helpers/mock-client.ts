// An in-memory stand-in for the official iii-sdk client, for unit tests: it records what the
// publisher registers and calls, and lets a test play the engine (connect, fire, invoke).
import { randomUUID } from 'node:crypto'
import type { PublisherClient } from '../../src/publisher.js'
import type { Logger } from '../../src/logger.js'

type RegisterFunction = PublisherClient['registerFunction']
type Handler = Extract<Parameters<RegisterFunction>[1], (...args: never[]) => unknown>
type FunctionOptions = Parameters<RegisterFunction>[2]
type TriggerTypeHandler = Parameters<PublisherClient['registerTriggerType']>[1]

export interface Call {
  function_id: string
  payload: unknown
  timeoutMs: number | undefined
}

/** Shaped like iii-sdk's InvocationError: `message` is `code: remote message`. */
export class InvocationFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`)
  }
}

export class MockClient implements PublisherClient {
  readonly functions = new Map<string, { handler: Handler; options: FunctionOptions }>()
  readonly triggers = new Map<string, { type: string; function_id: string; config: unknown }>()
  readonly triggerTypes = new Map<string, TriggerTypeHandler>()
  readonly calls: Call[] = []
  /** How the "engine" answers trigger(); replace per test. */
  respond: (call: Call) => Promise<unknown> = async () => ({})

  registerFunction: RegisterFunction = (id, handler, options) => {
    if (this.functions.has(id)) throw new Error(`function id already registered: ${id}`)
    if (typeof handler !== 'function') throw new Error('mock only takes handler functions')
    this.functions.set(id, { handler, options })
    return { id, unregister: () => void this.functions.delete(id) }
  }

  registerTrigger: PublisherClient['registerTrigger'] = (t) => {
    const id = randomUUID()
    this.triggers.set(id, { type: t.type, function_id: t.function_id, config: t.config })
    return { unregister: () => void this.triggers.delete(id) }
  }

  registerTriggerType: PublisherClient['registerTriggerType'] = (tt, handler) => {
    this.triggerTypes.set(tt.id, handler as TriggerTypeHandler)
    return {
      id: tt.id,
      registerTrigger: (functionId, config) => this.registerTrigger({ type: tt.id, function_id: functionId, config }),
      registerFunction: (functionId, h) => this.registerFunction(functionId, h),
      unregister: () => void this.triggerTypes.delete(tt.id),
    }
  }

  trigger: PublisherClient['trigger'] = async (request) => {
    const call: Call = { function_id: request.function_id, payload: request.payload, timeoutMs: request.timeoutMs }
    this.calls.push(call)
    return (await this.respond(call)) as never
  }

  /** Plays a (re)connect: the engine hands every binding of a worker-provided type to its provider. */
  async connect(): Promise<void> {
    for (const [id, t] of this.triggers) {
      const provider = this.triggerTypes.get(t.type)
      if (provider) await provider.registerTrigger({ id, function_id: t.function_id, config: t.config })
    }
  }

  /** Fires a trigger type at every binding, like a provider would. */
  async fire(type: string, payload: unknown): Promise<unknown[]> {
    const out: unknown[] = []
    for (const t of [...this.triggers.values()]) {
      if (t.type === type) out.push(await this.invoke(t.function_id, payload))
    }
    return out
  }

  async invoke(functionId: string, data: unknown): Promise<unknown> {
    const fn = this.functions.get(functionId)
    if (!fn) throw new Error(`no function ${functionId}`)
    return fn.handler(data as never)
  }

  callsTo(functionId: string): Call[] {
    return this.calls.filter((c) => c.function_id === functionId)
  }

  triggersOf(type: string): { type: string; function_id: string; config: unknown }[] {
    return [...this.triggers.values()].filter((t) => t.type === type)
  }
}

/** A logger that keeps every line. */
export class MemoryLogger implements Logger {
  readonly lines: { level: string; message: string }[] = []
  debug = (message: string): void => void this.lines.push({ level: 'debug', message })
  info = (message: string): void => void this.lines.push({ level: 'info', message })
  warn = (message: string): void => void this.lines.push({ level: 'warn', message })
  error = (message: string): void => void this.lines.push({ level: 'error', message })
  at(level: string): string[] {
    return this.lines.filter((l) => l.level === level).map((l) => l.message)
  }
}

/** Resolves when `predicate` holds, checking after every macrotask. */
export async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((r) => setImmediate(r))
}
