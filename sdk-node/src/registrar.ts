import { describeError, errorMessage, type Logger } from './logger.js'
import { msg } from './messages.js'

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
  functionId: string
  payload: Record<string, unknown>
}

/** An item the registry refused with a validation error; it is not retried. */
export interface Rejection {
  key: string
  label: string
  message: string
}

/** The outcome of a registration run. */
export interface RegistrationResult {
  /** True when the registry accepted every skill and prompt. */
  registered: boolean
  /** Items the registry refused (permanent failures, not retried). */
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

// Messages of the registry's own validation (and of payload decoding): a call refused with
// one of these will be refused again, so it is reported and never retried.
const PERMANENT = [
  /\bid must be non-empty\b/,
  /\bid may not have\b/,
  /\bid too long\b/,
  /\binvalid id \(segment\b/,
  /\bskill must be non-empty\b/,
  /\bskill body too large\b/,
  /\bname must be non-empty\b/,
  /\bname too long\b/,
  /\bname may only contain\b/,
  /\bdescription must be non-empty\b/,
  /\bfunction_id must be non-empty\b/,
  /\bargument name must be non-empty\b/,
  /\bduplicate argument name\b/,
  /\bmissing field\b/,
  /\binvalid type\b/,
]

export function isPermanentError(err: unknown): boolean {
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : ''
  return PERMANENT.some((re) => re.test(message))
}

function isFunctionNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'function_not_found'
}

type RoundOutcome = 'complete' | 'transient' | 'stopped'

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
  private wake: (() => void) | undefined
  private first: Promise<RegistrationResult> | undefined
  private backoff: Required<BackoffOptions> = { ...DEFAULT_BACKOFF }

  constructor(private readonly deps: RegistrarDeps) {}

  /** Adds or replaces an item; once started, it is registered right away. */
  upsert(item: RegistrationItem): void {
    this.items.set(item.key, item)
    if (!this.started || this.stopped) return
    this.pending.set(item.key, ++this.version)
    this.ensureRunning()
  }

  /** Starts the first run; resolves with its outcome. Later calls return the same promise. */
  start(backoff: Required<BackoffOptions>): Promise<RegistrationResult> {
    if (this.first === undefined) {
      this.backoff = backoff
      this.started = true
      this.markAllPending()
      this.first = this.run()
    }
    return this.first
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
    if (this.active) this.wake?.()
    else void this.run()
  }

  private async run(): Promise<RegistrationResult> {
    this.active = true
    const { backoff } = this
    const { logger } = this.deps
    const rejected: Rejection[] = []
    let delay = backoff.initialMs
    let began = Date.now()
    for (;;) {
      if (this.restart) {
        this.restart = false
        delay = backoff.initialMs
        began = Date.now()
      }
      const outcome = this.stopped ? 'stopped' : await this.round(rejected)
      if (outcome === 'stopped' || this.stopped) {
        this.active = false
        return { registered: false, rejected }
      }
      if (this.restart) continue
      if (outcome === 'complete') {
        if (this.pending.size > 0) continue
        this.active = false
        if (rejected.length === 0) {
          logger.info(`registered with the skills registry: ${this.summary()}`)
          this.deps.onRegistered()
        }
        return { registered: rejected.length === 0, rejected }
      }
      const elapsed = Date.now() - began
      if (elapsed >= backoff.giveUpMs) {
        this.active = false
        logger.warn(msg.gaveUp)
        this.deps.onGaveUp()
        return { registered: false, rejected }
      }
      const wait = Math.min(delay, backoff.giveUpMs - elapsed)
      logger.debug(`retrying skills registration in ${wait} ms`)
      await this.sleep(wait)
      delay = Math.min(delay * backoff.multiplier, backoff.maxMs)
    }
  }

  private async round(rejected: Rejection[]): Promise<RoundOutcome> {
    for (const [key, item] of [...this.items]) {
      const version = this.pending.get(key)
      if (version === undefined) continue
      try {
        await this.deps.call(item)
      } catch (err) {
        if (this.stopped) return 'stopped'
        if (isPermanentError(err)) {
          const message = errorMessage(err)
          this.deps.logger.error(`skills registry refused ${item.label}: ${message}`)
          rejected.push({ key, label: item.label, message })
          if (this.pending.get(key) === version) this.pending.delete(key)
          continue
        }
        if (isFunctionNotFound(err)) this.deps.onRegistryAbsent()
        this.deps.logger.info(
          `skills registration of ${item.label} failed (${describeError(err)}); will retry`,
        )
        return 'transient'
      }
      if (this.stopped) return 'stopped'
      this.accepted.add(key)
      if (this.pending.get(key) === version) this.pending.delete(key)
      if (this.restart) return 'complete'
    }
    return 'complete'
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wake = done
      if (this.stopped || this.restart) done()
    })
  }

  private summary(): string {
    let skills = 0
    let prompts = 0
    for (const item of this.items.values()) {
      if (item.functionId === 'skills::register') skills++
      else prompts++
    }
    return `${skills} skill${skills === 1 ? '' : 's'}, ${prompts} prompt${prompts === 1 ? '' : 's'}`
  }
}
