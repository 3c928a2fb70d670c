import { describeError, type Logger } from './logger.js'
import { CODE_NOT_FOUND, msg } from './messages.js'
import { gaveUpHeldMessage, refusalOf, rejectionLine, type Rejection } from './refusal.js'

export { isPermanentError, type Holder, type Rejection } from './refusal.js'

/** Capped exponential backoff of boot-time registration (docs/publishers.md). */
export interface BackoffOptions {
  /** First wait after a failed round. Default 5 000 ms. */
  initialMs?: number
  /** Each further wait is the previous one times this. Default 2. */
  multiplier?: number
  /** Longest single wait. Default 60 000 ms. */
  maxMs?: number
  /** Give up this long after the first attempt of a registration run. Default 180 000 ms. */
  giveUpMs?: number
}

export const DEFAULT_BACKOFF: Readonly<Required<BackoffOptions>> = Object.freeze({
  initialMs: 5_000,
  multiplier: 2,
  maxMs: 60_000,
  giveUpMs: 180_000,
})

export function resolveBackoff(b: BackoffOptions | undefined): Required<BackoffOptions> {
  const out = { ...DEFAULT_BACKOFF }
  for (const key of Object.keys(DEFAULT_BACKOFF) as (keyof BackoffOptions)[]) {
    const v = b?.[key]
    if (v === undefined) continue
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(`backoff.${key} must be a finite number >= 0, got ${String(v)}`)
    }
    out[key] = v
  }
  if (out.multiplier < 1) {
    throw new RangeError(`backoff.multiplier must be >= 1, got ${out.multiplier}`)
  }
  return out
}

/** One call the registry must receive (`skills::register` or `prompts::register`). */
export interface RegistrationItem {
  /** Unique per item: `skill:<id>` / `prompt:<name>`. */
  key: string
  /** For log lines: `skill "resend"`. */
  label: string
  kind: 'skill' | 'prompt'
  /** The skill's id or the prompt's name. */
  name: string
  functionId: string
  payload: Record<string, unknown>
}

/** The outcome of a registration run, as `start()` resolves it. */
export interface RegistrationResult {
  /** True when the registry accepted every skill and prompt. */
  registered: boolean
  /**
   * Every refusal of the first round that met one, each with its code, holder and advice
   * (everything else of that round was registered). Empty when registration completed or gave
   * up with the registry absent.
   */
  rejected: Rejection[]
}

export interface RegistrarDeps {
  /** Performs one registry call; rejects on any failure. */
  call(item: RegistrationItem): Promise<unknown>
  logger: Logger
  /** A full round succeeded. */
  onRegistered(): void
  /** A run reached its deadline. */
  onGaveUp(): void
  /** A call failed because the registry's function does not exist (it is absent). */
  onRegistryAbsent(): void
}

/**
 * Whether err is the registry's answer that it does not hold what was asked: an unknown skill,
 * prompt, version or label (labelSkill, skillVersions, …). Our registry says so with code
 * NOT_FOUND; the text is the fallback for an upstream registry, which answers every failure
 * with invocation_failed.
 */
export function isNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (code === CODE_NOT_FOUND) return true
  if (code !== undefined && code !== 'invocation_failed') return false
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : ''
  return /\b(Skill|Prompt) not found: /.test(message)
}

/** @deprecated Use `isNotFound` (the Go and Python name); removed in the next release. */
export const isNotFoundError = isNotFound

function isFunctionNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'function_not_found'
}

type RoundOutcome = 'complete' | 'transient' | 'abandoned'

/**
 * Keeps the registry in step with the publisher's content. A run registers every pending
 * item in insertion order; when a round fails it waits (capped exponential backoff) and
 * retries what is still missing until the run's deadline. `requestAll` (reconnect, registry
 * back) marks everything pending again and restarts the run's clock; `upsert` after start
 * registers just the new or changed item.
 */
export class Registrar {
  private readonly items = new Map<string, RegistrationItem>()
  private readonly pending = new Map<string, number>()
  private readonly accepted = new Set<string>()
  private version = 0
  private active = false
  private started = false
  private stopped = false
  private restart = false
  private inRound = false
  private generation = 0
  private wake: (() => void) | undefined
  private first: Promise<RegistrationResult> | undefined
  private settleFirst: ((r: RegistrationResult) => void) | undefined
  private backoff: Required<BackoffOptions> = { ...DEFAULT_BACKOFF }

  constructor(private readonly deps: RegistrarDeps) {}

  /** Adds or replaces an item; once started, it is registered right away. */
  upsert(item: RegistrationItem): void {
    this.items.set(item.key, item)
    if (!this.started || this.stopped) return
    this.pending.set(item.key, ++this.version)
    this.ensureRunning()
  }

  /**
   * Starts the first run. Resolves with its outcome, or once a round met refusals (every
   * refusal of that round, after everything else of it was registered; the run goes on with
   * the items another worker holds). Later calls return the same promise.
   */
  start(backoff: Required<BackoffOptions>): Promise<RegistrationResult> {
    if (this.first === undefined) {
      this.backoff = backoff
      this.started = true
      this.markAllPending()
      this.first = new Promise((resolve) => {
        this.settleFirst = resolve
      })
      void this.run().then((r) => this.report(r))
    }
    return this.first
  }

  private report(r: RegistrationResult): void {
    const settle = this.settleFirst
    this.settleFirst = undefined
    settle?.({ registered: r.registered, rejected: [...r.rejected] })
  }

  /** Registers everything again (the engine or the registry may have lost it). */
  requestAll(reason: string): void {
    if (!this.started || this.stopped) return
    this.deps.logger.info(`${reason}; registering skills and prompts again`)
    this.markAllPending()
    if (this.active) {
      this.restart = true
      this.wake?.()
    } else {
      void this.run()
    }
  }

  /** Stops retrying; a running run resolves `{ registered: false }`. */
  stop(): void {
    this.stopped = true
    this.wake?.()
  }

  /** Keys the registry has accepted at least once (what `close({ unregister })` removes). */
  acceptedItems(): RegistrationItem[] {
    return [...this.items.values()].filter((i) => this.accepted.has(i.key))
  }

  private markAllPending(): void {
    for (const key of this.items.keys()) this.pending.set(key, ++this.version)
  }

  private ensureRunning(): void {
    if (!this.active) void this.run()
    else if (!this.inRound) this.wake?.() // cut a backoff pause short; a running round picks it up next
  }

  private async run(): Promise<RegistrationResult> {
    this.active = true
    const { backoff } = this
    const { logger } = this.deps
    const rejected: Rejection[] = [] // permanent refusals of this run
    const held = new Map<string, Rejection>() // pending items another worker holds, by key
    const end = (registered: boolean): RegistrationResult => {
      this.active = false
      return { registered, rejected }
    }
    let delay = backoff.initialMs
    let began = Date.now()
    for (;;) {
      if (this.restart) {
        this.restart = false
        delay = backoff.initialMs
        began = Date.now()
        held.clear()
      }
      if (this.stopped) return end(false)
      const deadline = began + backoff.giveUpMs
      const generation = ++this.generation
      const refused: Rejection[] = []
      this.inRound = true
      const outcome = await this.wait(this.round(rejected, held, refused, generation), deadline)
      this.inRound = false
      // A round cut short (deadline, stop, restart) is abandoned: it makes no further calls.
      if (outcome === 'timer' || outcome === 'woken') this.generation++
      // The first round that meets refusals settles start(): each one, at once.
      if (refused.length > 0) this.report({ registered: false, rejected: refused })
      if (this.stopped) return end(false)
      if (this.restart || outcome === 'woken') continue
      if (outcome === 'complete') {
        if ([...this.pending.keys()].some((key) => !held.has(key))) continue
        if (held.size === 0) {
          if (rejected.length === 0) {
            logger.info(`registered with the skills registry: ${this.summary()}`)
            this.deps.onRegistered()
          }
          return end(rejected.length === 0)
        }
        // Items another worker holds: wait, then try them again.
      }
      const remaining = deadline - Date.now()
      if (outcome === 'timer' || remaining <= 0) {
        // When every missing item is held by another worker the registry runs: say so.
        const stillHeld = this.heldPending(held)
        logger.warn(stillHeld === undefined ? msg.gaveUp : gaveUpHeldMessage(stillHeld))
        this.deps.onGaveUp()
        return end(false)
      }
      const pause = Math.min(delay, remaining)
      logger.debug(`retrying skills registration in ${pause} ms`)
      await this.wait(undefined, Date.now() + pause)
      delay = Math.min(delay * backoff.multiplier, backoff.maxMs)
    }
  }

  /** The refusals of the pending items when another worker holds every one of them. */
  private heldPending(held: Map<string, Rejection>): Rejection[] | undefined {
    const out: Rejection[] = []
    for (const key of this.items.keys()) {
      if (!this.pending.has(key)) continue
      const r = held.get(key)
      if (r === undefined) return undefined
      out.push(r)
    }
    return out
  }

  /**
   * One pass over the pending items, in order. A refusal of one item (permanent, or another
   * worker holds it) is recorded and the round goes on, so one id never blocks the others; a
   * failure that is not about the item (the registry is absent or does not answer) ends it.
   */
  private async round(
    rejected: Rejection[],
    held: Map<string, Rejection>,
    refused: Rejection[],
    generation: number,
  ): Promise<RoundOutcome> {
    const { logger } = this.deps
    for (const [key, item] of [...this.items]) {
      const version = this.pending.get(key)
      if (version === undefined) continue
      try {
        await this.deps.call(item)
      } catch (err) {
        if (generation !== this.generation) return 'abandoned'
        const r = refusalOf(item, err)
        if (r === undefined) {
          if (isFunctionNotFound(err)) this.deps.onRegistryAbsent()
          logger.info(`skills registration of ${item.label} failed (${describeError(err)}); will retry`)
          return 'transient'
        }
        refused.push(r)
        const line = rejectionLine(r)
        if (r.retried) {
          // Logged when it starts or its text changes, not at every retry.
          const prev = held.get(key)
          if (prev === undefined || rejectionLine(prev) !== line) logger.warn(line)
          else logger.debug(line)
          held.set(key, r)
        } else {
          logger.error(line)
          held.delete(key)
          rejected.push(r)
          if (this.pending.get(key) === version) this.pending.delete(key)
        }
        continue
      }
      if (generation !== this.generation) return 'abandoned'
      held.delete(key)
      this.accepted.add(key)
      if (this.pending.get(key) === version) this.pending.delete(key)
    }
    return 'complete'
  }

  /**
   * Waits for `work` (a round) or, without work, just until `until`. Ends early with
   * 'woken' on stop / restart (and, while not in a round, when an item is added).
   */
  private wait<T>(work: Promise<T> | undefined, until: number): Promise<T | 'timer' | 'woken'> {
    return new Promise((resolve) => {
      let settled = false
      const finish = (v: T | 'timer' | 'woken'): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (this.wake === wake) this.wake = undefined
        resolve(v)
      }
      const wake = (): void => finish('woken')
      const timer = setTimeout(() => finish('timer'), Math.max(0, until - Date.now()))
      this.wake = wake
      work?.then(finish, () => finish('timer'))
      if (this.stopped || this.restart) wake()
    })
  }

  private summary(): string {
    let skills = 0
    let prompts = 0
    for (const item of this.items.values()) {
      if (item.kind === 'skill') skills++
      else prompts++
    }
    return `${skills} skill${skills === 1 ? '' : 's'}, ${prompts} prompt${prompts === 1 ? '' : 's'}`
  }
}
