// The conformance driver (conformance/DRIVER.md): one JSON command per line on stdin, one
// JSON reply or event per line on stdout. Everything else goes to stderr.
//
//   III_URL=ws://127.0.0.1:49134 node sdk-node/dist/driver.js
import { createInterface } from 'node:readline'
import { registerWorker } from 'iii-sdk'
import { z } from 'zod'
import type { Logger } from './logger.js'
import { engineUrl } from './engine-url.js'
import { createPublisher, type Publisher } from './publisher.js'
import type { BackoffOptions, RegistrationResult } from './registrar.js'
import { resolveBackoff } from './registrar.js'
import { SigningKey } from './signing.js'
import { VERSION } from './version.js'

// stdout carries the protocol only: iii-sdk prints debug lines with console.debug, which
// Node writes to stdout, so every console method goes to stderr here.
const toStderr = (...args: unknown[]): void => console.error(...args)
console.log = toStderr
console.info = toStderr
console.debug = toStderr
console.warn = toStderr

function emit(obj: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`)
}

class CommandError extends Error {}

/** A decoded command line: the frame `id`, `cmd` and the arguments, as plain JSON gives them. */
type Command = Record<string, unknown> & { id?: unknown; cmd?: unknown }

/** Decodes one command line; throws on anything that is not a JSON object. */
function decodeCommand(line: string): Command {
  const c: unknown = JSON.parse(line)
  if (typeof c !== 'object' || c === null || Array.isArray(c)) {
    throw new SyntaxError('a command must be a JSON object')
  }
  return c as Command
}

function str(c: Command, key: string): string {
  const v = c[key]
  if (v === undefined) throw new CommandError(`${String(c.cmd)}: missing argument "${key}" (a string)`)
  if (typeof v !== 'string') {
    throw new CommandError(`${String(c.cmd)}: argument "${key}" must be a string, got ${JSON.stringify(v)}`)
  }
  return v
}

function optionalStr(c: Command, key: string): string | undefined {
  return c[key] === undefined || c[key] === null ? undefined : str(c, key)
}

function bool(c: Command, key: string, dflt: boolean): boolean {
  const v = c[key]
  if (v === undefined || v === null) return dflt
  if (typeof v !== 'boolean') {
    throw new CommandError(`${String(c.cmd)}: argument "${key}" must be a boolean, got ${JSON.stringify(v)}`)
  }
  return v
}

// Fixtures (conformance/DRIVER.md), written with zod as a user of this SDK would.
const SendEmailArgs = z.object({
  to: z.string().describe('Recipient address'),
  subject: z.string().describe('Subject line'),
  urgent: z.boolean().optional().describe('Mark as urgent'),
})
const CountWordsArgs = z.object({
  limit: z.int().describe('Maximum words'),
})
const EchoInput = z.object({ message: z.string(), repeat: z.int() })
const EchoOutput = z.object({ echo: z.string() })

function definePrompt(p: Publisher, fixture: string, name: string, signature?: string): string {
  const signed = signature === undefined ? {} : { signature }
  switch (fixture) {
    case 'send-email':
      return p.prompt(
        { name, description: 'Compose and send an email', args: SendEmailArgs, ...signed },
        ({ to, subject, urgent }) => ({
          content:
            `Compose an email to ${to} with the subject "${subject}".` +
            (urgent === true ? ' Mark it urgent.' : ''),
        }),
      )
    case 'count-words':
      return p.prompt(
        { name, description: 'Answer within a word limit', args: CountWordsArgs, ...signed },
        ({ limit }) => `Use at most ${limit} words.`,
      )
    case 'dialogue':
      return p.prompt({ name, description: 'A scripted two-turn dialogue', ...signed }, () => ({
        messages: [
          { role: 'user', content: { type: 'text', text: 'hi' } },
          { role: 'assistant', content: { type: 'text', text: 'hello' } },
        ],
      }))
    default:
      throw new CommandError(`prompt: unknown fixture ${JSON.stringify(fixture)}`)
  }
}

function defineFunction(p: Publisher, fixture: string, id: string): void {
  if (fixture !== 'echo') throw new CommandError(`function: unknown fixture ${JSON.stringify(fixture)}`)
  p.function(id, { input: EchoInput, output: EchoOutput, description: 'Echo a message' }, (input) => ({
    echo: input.message.repeat(Math.max(0, input.repeat)),
  }))
}

const logger: Logger = {
  debug: (message) => emit({ event: 'log', level: 'debug', message }),
  info: (message) => emit({ event: 'log', level: 'info', message }),
  warn: (message) => emit({ event: 'log', level: 'warn', message }),
  error: (message) => emit({ event: 'log', level: 'error', message }),
}

const backoff: BackoffOptions = {}
let signingKey: string | undefined

// The client and publisher are made by the first command that needs them, so a malformed
// III_URL fails that command (engineUrl throws at once) instead of the driver.
let session: { iii: ReturnType<typeof registerWorker>; publisher: Publisher } | undefined
function pub(): Publisher {
  if (session === undefined) {
    const iii = registerWorker(engineUrl(), {
      workerName: `iii-skills-node-driver:${process.pid}`,
      otel: { enabled: false },
      enableMetricsReporting: false,
    })
    const publisher = createPublisher(iii, signingKey === undefined ? { backoff, logger } : { backoff, logger, signingKey })
    publisher.on('registered', () => emit({ event: 'registered' }))
    publisher.on('gaveUp', () => emit({ event: 'gave_up' }))
    session = { iii, publisher }
  }
  return session.publisher
}

/** The start reply (DRIVER.md): registered, and every refusal with its code, holder and advice. */
function verdict(result: RegistrationResult): Record<string, unknown> {
  return {
    registered: result.registered,
    rejected: result.rejected.map((r) => ({
      kind: r.kind,
      name: r.name,
      code: r.code,
      message: r.message,
      holder: r.holder === undefined ? null : { worker_id: r.holder.workerId, worker_name: r.holder.workerName ?? null },
      advice: r.advice,
      retried: r.retried,
    })),
  }
}

let started = false
let exiting = false

const BACKOFF_KEYS: Record<string, keyof BackoffOptions> = {
  initial_ms: 'initialMs',
  multiplier: 'multiplier',
  max_ms: 'maxMs',
  give_up_ms: 'giveUpMs',
}

async function execute(c: Command): Promise<unknown> {
  switch (c.cmd) {
    case 'hello':
      return { sdk: 'node', version: VERSION }
    case 'configure': {
      if (started) throw new CommandError('configure must come before start')
      const key = c['signing_key']
      if (key !== undefined && key !== null) {
        if (session !== undefined) throw new CommandError('configure: signing_key must come before every other command')
        const path = str(c, 'signing_key')
        SigningKey.load(path) // the SDK's error, at once
        signingKey = path
      }
      const b = c['backoff']
      if (b === undefined || b === null) return null
      if (typeof b !== 'object' || Array.isArray(b)) {
        throw new CommandError('configure: backoff must be an object')
      }
      const next: BackoffOptions = { ...backoff }
      for (const [key, value] of Object.entries(b)) {
        const field = BACKOFF_KEYS[key]
        if (field === undefined) throw new CommandError(`configure: unknown backoff setting ${key}`)
        if (typeof value !== 'number') throw new CommandError(`configure: backoff.${key} must be a number`)
        next[field] = value
      }
      resolveBackoff(next)
      Object.assign(backoff, next)
      return null
    }
    case 'skill': {
      const signature = optionalStr(c, 'signature')
      pub().skill(str(c, 'skill_id'), str(c, 'markdown'), signature === undefined ? {} : { signature })
      return null
    }
    case 'section': {
      const output = c['output'] ?? null
      return { uri: pub().section(str(c, 'path'), () => output as never) }
    }
    case 'prompt': {
      const fixture = str(c, 'fixture')
      const name = c['name'] === undefined || c['name'] === null ? fixture : str(c, 'name')
      return { function_id: definePrompt(pub(), fixture, name, optionalStr(c, 'signature')) }
    }
    case 'function':
      defineFunction(pub(), str(c, 'fixture'), str(c, 'function_id'))
      return null
    case 'subscribe': {
      const kind = str(c, 'kind')
      if (kind === 'skills') {
        pub().onSkillChange(({ op, id }) => emit({ event: 'skill_change', op, id }))
      } else if (kind === 'prompts') {
        pub().onPromptChange(({ op, name }) => emit({ event: 'prompt_change', op, name }))
      } else {
        throw new CommandError(`subscribe: kind must be "skills" or "prompts", got ${JSON.stringify(kind)}`)
      }
      return null
    }
    case 'start': {
      const wait = bool(c, 'wait', true)
      const run = pub().start()
      started = true
      if (!wait) return null
      return verdict(await run)
    }
    case 'close': {
      const unregister = bool(c, 'unregister', false)
      await session?.publisher.close({ unregister })
      return null
    }
    default:
      throw new CommandError(`unknown command ${JSON.stringify(c.cmd)}`)
  }
}

async function handle(line: string): Promise<void> {
  if (line.trim() === '') return
  let c: Command
  try {
    c = decodeCommand(line)
  } catch (err) {
    emit({ id: null, ok: false, error: `bad command line: ${(err as Error).message}` })
    return
  }
  const id = c.id ?? null
  if (typeof c.cmd !== 'string') {
    const error =
      c.cmd === undefined
        ? 'missing "cmd" (the command name, a string)'
        : `"cmd" must be a string, got ${JSON.stringify(c.cmd)}`
    emit({ id, ok: false, error: `bad command line: ${error}` })
    return
  }
  try {
    const result = await execute(c)
    emit({ id, ok: true, result: result ?? null })
  } catch (err) {
    emit({ id, ok: false, error: err instanceof Error ? err.message : String(err) })
  }
  if (c.cmd === 'close') await exit()
}

async function exit(): Promise<void> {
  if (exiting) return
  exiting = true
  await session?.publisher.close()
  await session?.iii.shutdown().catch(() => {})
  process.stdout.write('', () => process.exit(0))
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
lines.on('line', (line) => {
  void handle(line)
})
lines.on('close', () => {
  void exit()
})
