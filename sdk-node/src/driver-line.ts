// Command-line decoding for the conformance driver.
//
// DRIVER.md frames every command as `{"id": <int>, "cmd": …, …arguments}`, and two commands
// (`skill` and `function`) also take an argument named `id`. A JSON parser keeps only one
// of two equal keys, so the driver reads the top-level keys itself, in order: the first
// `id` is the frame id and a second `id` is the argument. `skill_id` / `function_id` are
// accepted as unambiguous spellings of the argument.

/** A decoded command line: the frame id, the command name and its arguments. */
export interface CommandLine {
  id: unknown
  cmd: unknown
  args: Record<string, unknown>
}

const ID_ALIASES: Record<string, string> = { skill: 'skill_id', function: 'function_id' }

/** Decodes one command line; throws on anything that is not a JSON object. */
export function decodeCommandLine(line: string): CommandLine {
  const entries = topLevelEntries(line)
  let frameId: unknown = null
  let sawFrameId = false
  let cmd: unknown
  const args: Record<string, unknown> = {}
  for (const [key, value] of entries) {
    if (key === 'id' && !sawFrameId) {
      frameId = value
      sawFrameId = true
    } else if (key === 'cmd' && cmd === undefined) {
      cmd = value
    } else {
      args[key] = value
    }
  }
  const alias = typeof cmd === 'string' ? ID_ALIASES[cmd] : undefined
  if (alias !== undefined && args['id'] === undefined) {
    if (typeof args[alias] === 'string') {
      args['id'] = args[alias]
    } else if (typeof frameId === 'string') {
      // A single string id can only be the argument (frame ids are integers).
      args['id'] = frameId
    }
  }
  return { id: frameId, cmd, args }
}

/** The top-level key/value pairs of a JSON object, in order, duplicates kept. */
export function topLevelEntries(text: string): [string, unknown][] {
  let i = skipWs(text, 0)
  if (text[i] !== '{') throw new SyntaxError('a command must be a JSON object')
  i = skipWs(text, i + 1)
  const out: [string, unknown][] = []
  if (text[i] === '}') {
    if (skipWs(text, i + 1) !== text.length) throw new SyntaxError('unexpected text after the object')
    return out
  }
  for (;;) {
    if (text[i] !== '"') throw new SyntaxError(`expected a key at position ${i}`)
    const keyEnd = stringEnd(text, i)
    const key = JSON.parse(text.slice(i, keyEnd)) as string
    i = skipWs(text, keyEnd)
    if (text[i] !== ':') throw new SyntaxError(`expected ':' at position ${i}`)
    i = skipWs(text, i + 1)
    const valueEnd = valueEndAt(text, i)
    out.push([key, JSON.parse(text.slice(i, valueEnd))])
    i = skipWs(text, valueEnd)
    if (text[i] === ',') {
      i = skipWs(text, i + 1)
      continue
    }
    if (text[i] === '}') {
      if (skipWs(text, i + 1) !== text.length) throw new SyntaxError('unexpected text after the object')
      return out
    }
    throw new SyntaxError(`expected ',' or '}' at position ${i}`)
  }
}

function skipWs(s: string, i: number): number {
  while (i < s.length && (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r')) i++
  return i
}

/** Index just past the string literal starting at `i` (which is a '"'). */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '\\') j++
    else if (s[j] === '"') return j + 1
  }
  throw new SyntaxError('unterminated string')
}

/** Index just past the JSON value starting at `i`; JSON.parse validates it afterwards. */
function valueEndAt(s: string, i: number): number {
  const c = s[i]
  if (c === '"') return stringEnd(s, i)
  if (c === '{' || c === '[') {
    let depth = 0
    for (let j = i; j < s.length; j++) {
      const d = s[j]
      if (d === '"') {
        j = stringEnd(s, j) - 1
      } else if (d === '{' || d === '[') {
        depth++
      } else if (d === '}' || d === ']') {
        depth--
        if (depth === 0) return j + 1
      }
    }
    throw new SyntaxError('unterminated value')
  }
  let j = i
  while (j < s.length && !/[\s,}\]]/.test(s[j] ?? '')) j++
  if (j === i) throw new SyntaxError(`expected a value at position ${i}`)
  return j
}
