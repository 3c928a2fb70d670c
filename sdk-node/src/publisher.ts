import { randomUUID } from 'node:crypto'
import type { IIIClient } from 'iii-sdk'
import { z } from 'zod'
import { checkArguments, deriveArguments, wireArguments, type ArgsSchema, type ArgumentSpec } from './arguments.js'
import { consoleLogger, describeError, type Logger } from './logger.js'
import {
  Registrar,
  resolveBackoff,
  type BackoffOptions,
  type RegistrationItem,
  type RegistrationResult,
} from './registrar.js'
import { promptContent, SigningKey } from './signing.js'
import { check, promptError, sectionFunctionId, skillBodyError, skillIdError } from './validation.js'

/** The part of the official `iii-sdk` client the publisher uses (an `IIIClient` fits). */
export type PublisherClient = Pick<
  IIIClient,
  'registerFunction' | 'registerTrigger' | 'registerTriggerType' | 'trigger'
>

export interface PublisherOptions {
  /** Boot-time registration backoff; defaults 5 s, ×2, 60 s cap, give up after 180 s. Read by `start()`. */
  backoff?: BackoffOptions
  /** Timeout of each registry call. Default 5 000 ms. */
  callTimeoutMs?: number
  /** Where log lines go. Default: `console` (no debug lines). */
  logger?: Logger
  /**
   * Namespace of the publisher's own internal functions (change handlers, watchers).
   * Default `iii-skills::<random>`, unique per publisher so two processes never clash.
   */
  internalNamespace?: string
  /**
   * An OpenSSH key file (as ssh-keygen writes it: ssh-ed25519, ecdsa-sha2-nistp256/384/521 or
   * ssh-rsa) that signs every skill body and prompt definition this publisher registers
   * (docs/trust.md): an unencrypted private key signs here; an encrypted one or a public key
   * file (`.pub`) signs through the ssh-agent at SSH_AUTH_SOCK, which must hold the key. Read
   * by the constructor, which throws when the file is no usable key or the agent cannot sign
   * with it, saying why and what to do.
   */
  signingKey?: string
}

/** A JSON value (what a section may return besides markdown). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** What a section handler returns: markdown, `{ content }` (markdown) or any JSON (served pretty-printed). */
export type SectionResult = string | { content: string } | JsonValue

/** One message of a multi-turn prompt (MCP `PromptMessage`). */
export interface PromptMessage {
  role: 'user' | 'assistant'
  content: { type: string; [key: string]: unknown }
}

/** What a prompt handler returns: text, `{ content }` or `{ messages }`. */
export type PromptResult = string | { content: string } | { messages: PromptMessage[] }

type MaybePromise<T> = T | Promise<T>

export interface PromptDefinition<A extends ArgsSchema> {
  /** Slash-command name: lowercase ASCII letters, digits, `-`, `_`; max 64. */
  name: string
  /** Shown in the client's prompt picker. */
  description: string
  /** The arguments, as a zod object. Omit for a prompt without arguments. */
  args?: A
  /** Id of the handler function. Default `prompt::{name}`. */
  functionId?: string
  /** Message of the version a changed definition becomes in the registry's history. */
  message?: string
  /** Author of that version. */
  author?: string
  /**
   * A signature made elsewhere (`skills sign --prompt`) over the prompt's canonical JSON
   * (`canonicalPrompt`), sent instead of one made with `signingKey`.
   */
  signature?: string
}

/** Describes the version a changed skill body becomes in the registry's history. */
export interface VersionMeta {
  message?: string
  author?: string
  /**
   * A signature made elsewhere (`ssh-keygen -Y sign -n iii-skills`, `skills sign`) over the exact
   * body, sent instead of one made with `signingKey`.
   */
  signature?: string
}

/** The registry's answer to a label move. */
export interface LabelMove {
  id: string
  label: string
  version: number
  /** The version the label pointed at before; absent for a new label. */
  previous?: number
}

/** One version in the registry's history. */
export interface HistoryVersion {
  version: number
  registered_at: string
  bytes: number
  sha256: string
  message?: string
  author?: string
  labels?: string[]
  /** The principal allowed_signers names for the signing key; null when unsigned or untrusted. */
  signed_by: string | null
  /** The signing key's `SHA256:…` fingerprint. */
  key?: string
  /** The armored signature. */
  signature?: string
  /** Why the version was yanked. */
  yanked?: string
  /** A prompt version's canonical JSON: the bytes its sha256 digests and its signature covers. */
  definition?: string
}

/** A skill's or prompt's history: versions newest first, and the labels. */
export interface History {
  id: string
  latest: number
  labels: Record<string, number>
  versions: HistoryVersion[]
}

/** Adds a version's message and author to a register payload when given. */
function withMeta(payload: Record<string, unknown>, meta: VersionMeta): Record<string, unknown> {
  if (meta.message) payload['message'] = meta.message
  if (meta.author) payload['author'] = meta.author
  return payload
}

export interface TypedFunctionSpec<I extends z.ZodType, O extends z.ZodType> {
  /** Request schema; sent as `request_format` and checked before the handler runs. */
  input: I
  /** Response schema; sent as `response_format` and checked on the handler's result. */
  output: O
  description?: string
  metadata?: Record<string, unknown>
}

export type ChangeOp = 'register' | 'unregister'

/** A `skills::on-change` event. */
export interface SkillChange {
  op: ChangeOp
  id: string
}

/** A `prompts::on-change` event. */
export interface PromptChange {
  op: ChangeOp
  name: string
}

/** Undoes a subscription or listener. */
export type Unsubscribe = () => void

export interface PublisherEvents {
  /** A full (re-)registration round succeeded. */
  registered: () => void
  /** A registration run reached its deadline without completing. */
  gaveUp: () => void
}

export interface CloseOptions {
  /** Also remove this publisher's skills and prompts from the registry. */
  unregister?: boolean
}

type RegisterOptions = NonNullable<Parameters<PublisherClient['registerFunction']>[2]>
type SchemaFormat = NonNullable<RegisterOptions['request_format']>

/** The JSON Schema of a zod schema, in the shape `registerFunction` takes. */
function format(schema: z.ZodType, io: 'input' | 'output'): SchemaFormat {
  return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as SchemaFormat
}

interface Handle {
  unregister(): void
}

const SKILL_CHANGE = z.object({ op: z.enum(['register', 'unregister']), id: z.string() })
const PROMPT_CHANGE = z.object({ op: z.enum(['register', 'unregister']), name: z.string() })
const REGISTRY_FUNCTION = 'skills::register'
const INTERNAL = { internal: true } as const

/**
 * Publishes skills, section functions and prompts to the skills registry through an
 * official `iii-sdk` client, keeps them registered across engine reconnects and registry
 * restarts, and delivers registry change events.
 */
export class Publisher {
  private readonly logger: Logger
  private readonly callTimeoutMs: number
  private readonly signingKey: SigningKey | undefined
  private readonly ns: string
  private readonly registrar: Registrar
  private readonly promptRefs = new Map<string, Handle>()
  private readonly handles = new Set<Handle>()
  private readonly listeners: { [K in keyof PublisherEvents]: Set<PublisherEvents[K]> } = {
    registered: new Set(),
    gaveUp: new Set(),
  }
  private subscriptions = 0
  private connections = 0
  private registryPresent: boolean | undefined
  private first: Promise<RegistrationResult> | undefined
  private closed = false

  constructor(
    private readonly iii: PublisherClient,
    private readonly options: PublisherOptions = {},
  ) {
    this.logger = options.logger ?? consoleLogger
    this.callTimeoutMs = options.callTimeoutMs ?? 5_000
    resolveBackoff(options.backoff) // bad settings fail here, not later in start()
    this.signingKey = options.signingKey === undefined ? undefined : SigningKey.load(options.signingKey)
    this.ns = options.internalNamespace ?? `iii-skills::${randomUUID().slice(0, 8)}`
    this.registrar = new Registrar({
      call: (item) => this.call(item.functionId, item.payload),
      logger: this.logger,
      onRegistered: () => this.emit('registered'),
      onGaveUp: () => this.emit('gaveUp'),
      onRegistryAbsent: () => {
        this.registryPresent = false
      },
    })
  }

  /**
   * Adds a skill: markdown served at `iii://{id}` (ids nest: `resend/email/send`). Checked
   * here with the registry's rules; throws a `ValidationError` with the registry's message.
   * Adding an id again replaces its body. Registered by `start()` (and at once after it).
   * `meta` describes the version a changed body becomes in the registry's history
   * (unchanged content makes no version).
   */
  skill(id: string, markdown: string, meta: VersionMeta = {}): this {
    this.assertOpen()
    check(skillIdError(id))
    check(skillBodyError(markdown))
    this.registrar.upsert({
      key: `skill:${id}`,
      label: `skill ${JSON.stringify(id)}`,
      kind: 'skill',
      name: id,
      functionId: REGISTRY_FUNCTION,
      payload: this.signed(withMeta({ id, skill: markdown }, meta), meta.signature, markdown),
    })
    return this
  }

  /**
   * Registers the function behind the section URI `iii://fn/{path}` (`a/b/c` → `a::b::c`)
   * and returns that URI. The handler takes no arguments.
   */
  section(
    path: string,
    handler: () => MaybePromise<SectionResult>,
    options: { description?: string } = {},
  ): string {
    this.assertOpen()
    const fid = sectionFunctionId(path)
    const ref = this.iii.registerFunction(fid, async () => handler(), {
      description: options.description ?? `Skill section iii://fn/${path}`,
    })
    this.handles.add(ref)
    return `iii://fn/${path}`
  }

  /**
   * Adds a slash-command prompt. Registers its handler function (default id
   * `prompt::{name}`) and the prompt itself; the argument list comes from the zod object.
   * Arguments are checked (and MCP's strings converted) before the handler runs.
   * Returns the handler's function id. Defining a name again replaces the prompt.
   */
  prompt<A extends ArgsSchema = z.ZodObject<Record<string, never>>>(
    definition: PromptDefinition<A>,
    handler: (args: z.output<A>) => MaybePromise<PromptResult>,
  ): string {
    this.assertOpen()
    const { name, description } = definition
    const functionId = definition.functionId ?? `prompt::${name}`
    const schema = (definition.args ?? z.object({})) as A
    const specs: ArgumentSpec[] = deriveArguments(schema)
    const args = wireArguments(specs)
    check(promptError(name, description, functionId, args))

    this.promptRefs.get(name)?.unregister()
    const ref = this.iii.registerFunction(
      functionId,
      async (data: unknown) => {
        const checked = checkArguments(name, specs, schema, data)
        if (!checked.ok) throw new Error(checked.message)
        return handler(checked.value)
      },
      {
        description: `Render the /${name} prompt: ${description}`,
        request_format: format(schema, 'input'),
      },
    )
    this.promptRefs.set(name, ref)
    this.registrar.upsert({
      key: `prompt:${name}`,
      label: `prompt ${JSON.stringify(name)}`,
      kind: 'prompt',
      name,
      functionId: 'prompts::register',
      payload: this.signed(
        withMeta({ name, description, arguments: args, function_id: functionId }, definition),
        definition.signature,
        promptContent(description, functionId, args),
      ),
    })
    return functionId
  }

  /**
   * Registers any function with `request_format` / `response_format` JSON Schemas derived
   * from zod, so `engine::functions::info` shows its contract. The input is parsed with
   * `input` before the handler runs and the result with `output` before it is returned.
   */
  function<I extends z.ZodType, O extends z.ZodType>(
    id: string,
    spec: TypedFunctionSpec<I, O>,
    handler: (input: z.output<I>) => MaybePromise<z.input<O>>,
  ): { id: string; unregister(): void } {
    this.assertOpen()
    const options: RegisterOptions = {
      request_format: format(spec.input, 'input'),
      response_format: format(spec.output, 'output'),
    }
    if (spec.description !== undefined) options.description = spec.description
    if (spec.metadata !== undefined) options.metadata = spec.metadata
    const ref = this.iii.registerFunction(
      id,
      async (data: unknown) => {
        const input = spec.input.safeParse(data)
        if (!input.success) {
          throw new Error(`function ${JSON.stringify(id)}: invalid input: ${issues(input.error)}`)
        }
        const result = await handler(input.data)
        const output = spec.output.safeParse(result)
        if (!output.success) {
          throw new Error(
            `function ${JSON.stringify(id)}: handler returned invalid output: ${issues(output.error)}`,
          )
        }
        return output.data
      },
      options,
    )
    this.handles.add(ref)
    return {
      id,
      unregister: () => {
        this.handles.delete(ref)
        ref.unregister()
      },
    }
  }

  /** @deprecated Use `function` (the Go and Python name); `fn` is removed in the next release. */
  fn<I extends z.ZodType, O extends z.ZodType>(
    id: string,
    spec: TypedFunctionSpec<I, O>,
    handler: (input: z.output<I>) => MaybePromise<z.input<O>>,
  ): { id: string; unregister(): void } {
    return this.function(id, spec, handler)
  }

  /**
   * Points `label` (production, staging, …; never `latest`) at a version of skill `id`:
   * `version` is a number or another label. `adminToken` is needed for the registry's
   * protected labels. Moving the registry's serve label changes what readers are served.
   */
  labelSkill(id: string, label: string, version: number | string, adminToken?: string): Promise<LabelMove> {
    return this.moveLabel('skills::label', { id }, label, version, adminToken)
  }

  /** `labelSkill` for prompt `name`. */
  labelPrompt(name: string, label: string, version: number | string, adminToken?: string): Promise<LabelMove> {
    return this.moveLabel('prompts::label', { name }, label, version, adminToken)
  }

  /** The kept versions of skill `id`, newest first, and its labels. */
  skillVersions(id: string): Promise<History> {
    return this.call('skills::versions', { id }) as Promise<History>
  }

  /** The kept versions of prompt `name`, newest first, and its labels. */
  promptVersions(name: string): Promise<History> {
    return this.call('prompts::versions', { name }) as Promise<History>
  }

  private moveLabel(
    functionId: string,
    key: Record<string, string>,
    label: string,
    version: number | string,
    adminToken?: string,
  ): Promise<LabelMove> {
    const payload: Record<string, unknown> = { ...key, label, version }
    if (adminToken) payload['admin_token'] = adminToken
    return this.call(functionId, payload) as Promise<LabelMove>
  }

  /** Calls `handler` for every `skills::on-change` event (`{ op, id }`). */
  onSkillChange(handler: (change: SkillChange) => MaybePromise<void>): Unsubscribe {
    return this.subscribe('skills::on-change', 'on-skill-change', (payload) => {
      const parsed = SKILL_CHANGE.safeParse(payload)
      return parsed.success ? parsed.data : undefined
    }, handler)
  }

  /** Calls `handler` for every `prompts::on-change` event (`{ op, name }`). */
  onPromptChange(handler: (change: PromptChange) => MaybePromise<void>): Unsubscribe {
    return this.subscribe('prompts::on-change', 'on-prompt-change', (payload) => {
      const parsed = PROMPT_CHANGE.safeParse(payload)
      return parsed.success ? parsed.data : undefined
    }, handler)
  }

  /** Listens to publisher events (`registered`, `gaveUp`). */
  on<K extends keyof PublisherEvents>(event: K, listener: PublisherEvents[K]): Unsubscribe {
    this.listeners[event].add(listener)
    return () => {
      this.listeners[event].delete(listener)
    }
  }

  /**
   * Registers every skill and prompt (in the order they were added) and keeps them
   * registered: after the engine connection is re-established, and when the registry's
   * `skills::register` appears again after having been absent. Resolves once the first
   * registration completed (`{ registered: true, rejected: [] }`), gave up
   * (`{ registered: false, rejected: [] }`, the handshake warning logged), or once a round met
   * refusals (`{ registered: false, rejected }`: each with its code, the holder of an id another
   * worker holds, and advice; everything else of that round was registered, held ids are
   * retried). Never rejects because the registry is missing.
   */
  start(): Promise<RegistrationResult> {
    if (this.closed) return Promise.resolve({ registered: false, rejected: [] })
    if (this.first === undefined) {
      const backoff = resolveBackoff(this.options.backoff)
      this.watchConnection()
      this.watchRegistry()
      this.first = this.registrar.start(backoff)
    }
    return this.first
  }

  /**
   * Stops retrying; with `unregister`, removes this publisher's skills and prompts from the
   * registry; then unregisters its functions and triggers. The iii client stays open.
   */
  async close(options: CloseOptions = {}): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.registrar.stop()
    if (options.unregister) {
      const items = this.registrar.acceptedItems()
      const results = await Promise.allSettled(items.map((item) => this.unregisterItem(item)))
      results.forEach((r, i) => {
        if (r.status === 'rejected') {
          this.logger.warn(`could not unregister ${items[i]?.label}: ${describeError(r.reason)}`)
        }
      })
    }
    for (const ref of this.promptRefs.values()) ref.unregister()
    this.promptRefs.clear()
    for (const h of this.handles) h.unregister()
    this.handles.clear()
  }

  private unregisterItem(item: RegistrationItem): Promise<unknown> {
    if (item.functionId === REGISTRY_FUNCTION) {
      return this.call('skills::unregister', { id: item.payload['id'] })
    }
    return this.call('prompts::unregister', { name: item.payload['name'] })
  }

  /**
   * Adds the signature of `content` to a register payload: the one given, else one made with the
   * signing key (once, here: re-registrations send it again), else none.
   */
  private signed(payload: Record<string, unknown>, given: string | undefined, content: string): Record<string, unknown> {
    const signature = given ?? this.signingKey?.sign(content)
    if (signature !== undefined) payload['signature'] = signature
    return payload
  }

  private call(functionId: string, payload: Record<string, unknown>): Promise<unknown> {
    return this.iii.trigger({ function_id: functionId, payload, timeoutMs: this.callTimeoutMs })
  }

  private subscribe<E>(
    triggerType: string,
    label: string,
    decode: (payload: unknown) => E | undefined,
    handler: (change: E) => MaybePromise<void>,
  ): Unsubscribe {
    this.assertOpen()
    const fid = `${this.ns}::${label}::${++this.subscriptions}`
    const fn = this.iii.registerFunction(
      fid,
      async (payload: unknown) => {
        const change = decode(payload)
        if (change === undefined) {
          this.logger.warn(`ignoring malformed ${triggerType} event: ${JSON.stringify(payload)}`)
          return null
        }
        try {
          await handler(change)
        } catch (err) {
          this.logger.error(`${triggerType} handler failed: ${describeError(err)}`)
        }
        return null
      },
      { description: `iii-skills: ${triggerType} subscription`, metadata: INTERNAL },
    )
    const trigger = this.iii.registerTrigger({ type: triggerType, function_id: fid, config: {} })
    const handle: Handle = {
      unregister: () => {
        trigger.unregister()
        fn.unregister()
      },
    }
    this.handles.add(handle)
    return () => {
      if (!this.handles.delete(handle)) return
      handle.unregister()
    }
  }

  /**
   * Reconnect detection. iii-sdk 0.22.1 keeps its connection state private (no getter, no
   * listener), but it replays every registration on each (re)connect, and the engine hands
   * every binding of a trigger type to that type's provider. So the publisher provides a
   * private trigger type and binds one trigger to it: the provider callback runs once per
   * established connection. The first call is the current connection; each later one is a
   * reconnect, after which the engine may have restarted with empty state.
   */
  private watchConnection(): void {
    const typeId = `${this.ns}::connection`
    const fid = `${this.ns}::connected`
    const type = this.iii.registerTriggerType(
      { id: typeId, description: 'iii-skills: fires once per (re)established engine connection' },
      {
        registerTrigger: async () => {
          this.connections++
          if (this.connections > 1) this.registrar.requestAll('engine connection re-established')
        },
        unregisterTrigger: async () => {},
      },
    )
    const fn = this.iii.registerFunction(fid, async () => null, {
      description: 'iii-skills: connection sentinel target',
      metadata: INTERNAL,
    })
    const trigger = this.iii.registerTrigger({ type: typeId, function_id: fid, config: {} })
    this.handles.add({
      unregister: () => {
        trigger.unregister()
        fn.unregister()
        type.unregister()
      },
    })
  }

  /**
   * Registry-return detection: `engine::functions-available` fires with the function list
   * whenever it changes; when `skills::register` is listed after having been absent, the
   * registry (re)started and everything is registered again.
   */
  private watchRegistry(): void {
    const fid = `${this.ns}::functions-available`
    const fn = this.iii.registerFunction(
      fid,
      async (payload: unknown) => {
        const present = await this.registryListed(payload)
        const was = this.registryPresent
        this.registryPresent = present
        if (present && was === false) this.registrar.requestAll('skills registry is available again')
        return null
      },
      { description: 'iii-skills: watches for the skills registry', metadata: INTERNAL },
    )
    const trigger = this.iii.registerTrigger({
      type: 'engine::functions-available',
      function_id: fid,
      config: {},
    })
    this.handles.add({
      unregister: () => {
        trigger.unregister()
        fn.unregister()
      },
    })
  }

  private async registryListed(payload: unknown): Promise<boolean> {
    let functions = (payload as { functions?: unknown } | null)?.functions
    if (!Array.isArray(functions)) {
      try {
        const listed = await this.iii.trigger<unknown, { functions?: unknown }>({
          function_id: 'engine::functions::list',
          payload: { prefix: 'skills::' },
          timeoutMs: this.callTimeoutMs,
        })
        functions = listed?.functions
      } catch (err) {
        this.logger.debug(`engine::functions::list failed: ${describeError(err)}`)
        return this.registryPresent ?? false
      }
    }
    return (
      Array.isArray(functions) &&
      functions.some((f) => (f as { function_id?: unknown } | null)?.function_id === REGISTRY_FUNCTION)
    )
  }

  private emit(event: keyof PublisherEvents): void {
    for (const listener of this.listeners[event]) {
      try {
        listener()
      } catch (err) {
        this.logger.error(`${event} listener failed: ${describeError(err)}`)
      }
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('publisher is closed')
  }
}

function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => (i.path.length > 0 ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ')
}

/** Creates a publisher on an official `iii-sdk` client (`registerWorker(...)`). */
export function createPublisher(iii: PublisherClient, options: PublisherOptions = {}): Publisher {
  return new Publisher(iii, options)
}
