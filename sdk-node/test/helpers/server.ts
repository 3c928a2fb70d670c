// Starts the real registry (`bin/skills --standalone`) on a free port with a fresh data
// directory, and waits until `skills::list` answers. Missing binary = a loud failure.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { registerWorker, type IIIClient } from 'iii-sdk'

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
export const sdkRoot = fileURLToPath(new URL('../../', import.meta.url))

export function serverBinary(): string {
  const bin = process.env['SKILLS_BIN'] ?? join(repoRoot, 'bin', 'skills')
  if (!existsSync(bin)) {
    throw new Error(`${bin} does not exist: run \`make build\` in ${repoRoot} (or set SKILLS_BIN)`)
  }
  return bin
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** An official client for tests: quick reconnects, no telemetry. */
export function testClient(url: string, name: string): IIIClient {
  return registerWorker(url, {
    workerName: `${name}:${process.pid}`,
    otel: { enabled: false },
    enableMetricsReporting: false,
    reconnectionConfig: { initialDelayMs: 50, maxDelayMs: 250, jitterFactor: 0 },
  })
}

/** Polls `probe` until it returns true; fails with `describe()` after `limitMs`. */
export async function eventually(
  probe: () => Promise<boolean> | boolean,
  describe: () => string,
  limitMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + limitMs
  let last: unknown
  for (;;) {
    try {
      if (await probe()) return
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) {
      throw new Error(`${describe()}${last ? ` (last error: ${String(last)})` : ''}`)
    }
    await sleep(50)
  }
}

export class RegistryServer {
  private child: ChildProcess | undefined
  private output = ''
  readonly dataDirs: string[] = []

  private constructor(
    readonly port: number,
    readonly url: string,
    readonly config: string | undefined,
  ) {}

  /** Starts a server on a free port (or `port`), with the config file at `config` if given. */
  static async start(port?: number, config?: string): Promise<RegistryServer> {
    const p = port ?? (await freePort())
    const server = new RegistryServer(p, `ws://127.0.0.1:${p}`, config)
    await server.spawn()
    return server
  }

  /** What the server printed, for failure messages. */
  log(): string {
    return this.output
  }

  /** Starts the process on this port with a fresh, empty data directory; waits until ready. */
  async spawn(): Promise<void> {
    const bin = serverBinary()
    const data = mkdtempSync(join(tmpdir(), 'iii-skills-node-'))
    this.dataDirs.push(data)
    const args = ['--standalone', '--url', this.url, '--data', data, '--mcp-addr', '']
    if (this.config !== undefined) args.push('--config', this.config)
    const child = spawn(bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.child = child
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()))
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()))
    let exited: number | null = null
    child.once('exit', (code) => (exited = code ?? -1))
    const probe = testClient(this.url, 'readiness-probe')
    try {
      await eventually(
        async () => {
          if (exited !== null) throw new Error(`bin/skills exited with ${exited}`)
          await probe.trigger({ function_id: 'skills::list', payload: {}, timeoutMs: 1000 })
          return true
        },
        () => `bin/skills did not answer skills::list on ${this.url}\n--- server output ---\n${this.output}`,
      )
    } finally {
      await probe.shutdown()
    }
  }

  /** Stops the process (SIGTERM, then SIGKILL) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child
    this.child = undefined
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((r) => child.once('exit', () => r()))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  }

  /** Stops the server and removes its data directories. */
  async dispose(): Promise<void> {
    await this.stop()
    for (const d of this.dataDirs) rmSync(d, { recursive: true, force: true })
  }
}

/** A Node program run as a user runs it (`III_URL=… node file`), its stdout and stderr collected. */
export class Program {
  output = ''
  private readonly child: ChildProcess
  private readonly exited: Promise<number | null>

  constructor(file: string, cwd: string, url: string) {
    this.child = spawn(process.execPath, [file], {
      cwd,
      env: { ...process.env, III_URL: url, OTEL_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()))
    this.child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()))
    this.exited = new Promise((r) => this.child.once('exit', (code) => r(code)))
  }

  /** Waits until the output holds text; what names the wait in the failure. */
  async waitFor(text: string, what: string): Promise<void> {
    await eventually(
      () => this.output.includes(text),
      () => `${what}:\n${this.output}`,
    )
  }

  /** SIGTERM; resolves with the exit code. */
  async stop(): Promise<number | null> {
    this.child.kill('SIGTERM')
    return this.exited
  }

  /** Kills what is left (for a finally block). */
  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL')
  }
}
