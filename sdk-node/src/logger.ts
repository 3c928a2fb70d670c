/** Where the publisher reports what it does. Every method takes one finished message. */
export interface Logger {
  debug(message: string): void
  info(message: string): void
  warn(message: string): void
  error(message: string): void
}

/** The default logger: `console`, without debug lines. */
export const consoleLogger: Logger = {
  debug: () => {},
  info: (m) => console.info(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.length > 0 ? code : undefined
}

/**
 * The message of a thrown value without the `code: ` prefix iii-sdk's `InvocationError`
 * puts in front of the remote message.
 */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const code = errorCode(err)
  return code !== undefined && message.startsWith(`${code}: `) ? message.slice(code.length + 2) : message
}

/** Describes a thrown value for a log line: `code: message` when there is a code. */
export function describeError(err: unknown): string {
  const code = errorCode(err)
  return code !== undefined ? `${code}: ${errorMessage(err)}` : errorMessage(err)
}
