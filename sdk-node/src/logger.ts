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

/** Describes a thrown value for a log line. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code
    return typeof code === 'string' && code.length > 0 ? `${code}: ${err.message}` : err.message
  }
  return String(err)
}
