// The engine address (docs/publishers.md, "The engine address"): the same rules and messages as
// the Go and Python SDKs (conformance/vectors/engine_urls.json).

/** Where an iii engine listens for workers by default. */
export const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'

/**
 * The engine's address, resolved as the official SDKs' `registerWorker` does: `url` when given
 * and not empty, else `$III_URL`, else `ws://127.0.0.1:49134`. Throws a `RangeError` naming the
 * address and what is wrong when it can never be an engine's (not `ws://` or `wss://`, no host,
 * a bad port, a fragment, a space, a control or a non-ASCII character), so a typo fails at once
 * instead of in a retry loop.
 */
export function engineUrl(url?: string, env: NodeJS.ProcessEnv = process.env): string {
  let raw = url ?? ''
  let from = ''
  if (raw === '') {
    raw = env['III_URL'] ?? ''
    from = ' (from III_URL)'
    if (raw === '') return DEFAULT_ENGINE_URL
  }
  const why = engineUrlProblem(raw)
  if (why !== undefined) {
    throw new RangeError(
      `invalid engine URL ${JSON.stringify(raw)}${from}: ${why}; expected ws://host:port or wss://host:port`,
    )
  }
  return raw
}

const PORT_PROBLEM = 'the port is not a number from 1 to 65535'

/**
 * What is wrong with an engine URL, or undefined. Read by hand, not with `URL`, so the three
 * SDKs (each with its own URL parser) give the same verdict.
 */
function engineUrlProblem(raw: string): string | undefined {
  for (const ch of raw) {
    const c = ch.codePointAt(0) ?? 0
    if (c <= 0x20 || c >= 0x7f) return 'it holds a space, a control character or a non-ASCII character'
  }
  const sep = raw.indexOf('://')
  if (sep <= 0) return 'it has no scheme'
  const scheme = raw.slice(0, sep).toLowerCase()
  if (scheme !== 'ws' && scheme !== 'wss') return `the scheme is ${JSON.stringify(scheme)}, not ws or wss`
  const rest = raw.slice(sep + 3)
  if (rest.includes('#')) return 'it has a fragment (#…)'
  let authority = rest
  const pathAt = authority.search(/[/?]/)
  if (pathAt >= 0) authority = authority.slice(0, pathAt)
  const at = authority.lastIndexOf('@')
  if (at >= 0) authority = authority.slice(at + 1)
  let host = authority
  let port = ''
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']')
    if (end < 0) return 'it has no host'
    host = authority.slice(1, end)
    port = authority.slice(end + 1)
    if (port !== '' && !port.startsWith(':')) return PORT_PROBLEM
    port = port.replace(/^:/, '')
  } else {
    const colon = authority.indexOf(':')
    if (colon >= 0) {
      host = authority.slice(0, colon)
      port = authority.slice(colon + 1)
    }
  }
  if (host === '') return 'it has no host'
  if (port !== '' && (!/^[0-9]+$/.test(port) || Number(port) < 1 || Number(port) > 65535)) return PORT_PROBLEM
  return undefined
}
