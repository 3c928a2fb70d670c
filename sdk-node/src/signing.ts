// Signed versions (docs/trust.md, docs/publishers.md "Signing"): a publisher given a key signs
// the exact bytes it registers in OpenSSH's SSHSIG format (what `ssh-keygen -Y sign -n
// iii-skills` writes) and sends the armored signature with the register. A skill's bytes are
// its body; a prompt's, its canonical JSON. node:crypto signs but does not read OpenSSH private
// keys, so the openssh-key-v1 container (PROTOCOL.key) is read here; PEM files (ssh-keygen -m
// PEM) go to node:crypto as they are. A public key file (`.pub`) or an encrypted private key
// signs through the ssh-agent at SSH_AUTH_SOCK, which must hold the key (as `ssh-keygen -Y
// sign` does); each signature the agent makes is checked against the public key before use.
// The Go and Python publishers word their key errors the same way
// (conformance/vectors/signing.json).
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { AGENT, AgentError, agentExchange } from './agent.js'
import type { PromptArgument } from './validation.js'

/** The SSHSIG namespace of signatures over registry content. */
export const SIGNATURE_NAMESPACE = 'iii-skills'

const ARMOR_BEGIN = '-----BEGIN SSH SIGNATURE-----'
const ARMOR_END = '-----END SSH SIGNATURE-----'
const OPENSSH_BEGIN = '-----BEGIN OPENSSH PRIVATE KEY-----'
const OPENSSH_END = '-----END OPENSSH PRIVATE KEY-----'
const OPENSSH_MAGIC = 'openssh-key-v1\0'
/** The largest key ssh-keygen makes (RSA 16384 bits) is about 12 KiB. */
const MAX_KEY_FILE = 1 << 20

type KeyErrorKind = 'encrypted' | 'public' | 'encrypted_pem' | 'not_a_key' | 'unsupported'

/** The error of a key file the publisher cannot sign with (the same words in Go and Python). */
export function keyMessage(kind: KeyErrorKind, path: string, keyType = ''): string {
  const p = JSON.stringify(path)
  switch (kind) {
    case 'encrypted':
      return (
        `signing key ${p} is encrypted (it has a passphrase) and SSH_AUTH_SOCK is not set: load the key into an ` +
        'ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; or sign with ' +
        `ssh-keygen -Y sign -n ${SIGNATURE_NAMESPACE} (or skills sign) and pass the signature`
      )
    case 'public':
      return (
        `signing key ${p} is a public key and SSH_AUTH_SOCK is not set: load its private half into an ssh-agent ` +
        '(ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; or give the private key ' +
        'file (the one without .pub)'
      )
    case 'encrypted_pem':
      return (
        `signing key ${p} is an encrypted PEM key, whose public key cannot be read without its passphrase: give its ` +
        'public key file (.pub) to sign through the ssh-agent that holds the key, or rewrite it in the OpenSSH format ' +
        '(ssh-keygen -p -f FILE), which records the public key'
      )
    case 'unsupported':
      return (
        `signing key ${p} is of type ${keyType}: expected ssh-ed25519, ecdsa-sha2-nistp256, ` +
        'ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa'
      )
    default:
      return `signing key ${p} is not an OpenSSH private key: expected the file ssh-keygen writes (${OPENSSH_BEGIN})`
  }
}

type AgentErrorKind = 'unreachable' | 'not_in_agent' | 'refused' | 'bad_answer' | 'bad_signature'

/** What an agent error names besides the key file. */
export interface AgentErrorFields {
  socket: string
  fingerprint?: string
  count?: number
  reason?: string
}

/** The error of signing through the ssh-agent (the same words in Python; Go's sshsig says the same). */
export function agentMessage(kind: AgentErrorKind, path: string, f: AgentErrorFields): string {
  const head = `signing key ${JSON.stringify(path)}: the ssh-agent at ${JSON.stringify(f.socket)}`
  switch (kind) {
    case 'unreachable':
      return (
        `${head} cannot be reached (${f.reason ?? ''}): start one (eval "$(ssh-agent)"), load the key (ssh-add FILE) ` +
        'and set SSH_AUTH_SOCK to its socket'
      )
    case 'not_in_agent':
      return `${head} holds ${f.count ?? 0} keys, none of them ${f.fingerprint ?? ''} (add it with ssh-add)`
    case 'refused':
      return (
        `${head} refused to sign with ${f.fingerprint ?? ''}: check that it still holds the key (ssh-add -l), ` +
        'and confirm the request if the key was added with ssh-add -c'
      )
    case 'bad_signature':
      return `${head} made a signature with ${f.fingerprint ?? ''} that does not verify against the key`
    default:
      return `${head} answered with no valid reply: ${f.reason ?? ''}`
  }
}

class KeyFileError extends Error {
  constructor(readonly kind: KeyErrorKind, readonly keyType = '') {
    super(kind)
  }
}

/** A key file whose private half is not here: the public key blob, signed with by an ssh-agent. */
class AgentKey {
  constructor(
    readonly pub: Buffer,
    readonly why: 'encrypted' | 'public',
  ) {}
}

/** SSH wire encoding: uint32 lengths, big-endian. */
class Reader {
  private at = 0
  constructor(private readonly b: Buffer) {}
  uint32(): number {
    if (this.at + 4 > this.b.length) throw new KeyFileError('not_a_key')
    const v = this.b.readUInt32BE(this.at)
    this.at += 4
    return v
  }
  bytes(): Buffer {
    const n = this.uint32()
    if (this.at + n > this.b.length) throw new KeyFileError('not_a_key')
    const out = this.b.subarray(this.at, this.at + n)
    this.at += n
    return out
  }
  text(): string {
    return this.bytes().toString('latin1')
  }
}

function sshString(b: Buffer | string): Buffer {
  const body = typeof b === 'string' ? Buffer.from(b, 'utf8') : b
  const len = Buffer.alloc(4)
  len.writeUInt32BE(body.length)
  return Buffer.concat([len, body])
}

/** An SSH mpint of an unsigned big-endian number. */
function mpint(unsigned: Buffer): Buffer {
  let i = 0
  while (i < unsigned.length && unsigned[i] === 0) i++
  let v = unsigned.subarray(i)
  if (v.length > 0 && (v[0] ?? 0) & 0x80) v = Buffer.concat([Buffer.from([0]), v])
  return sshString(v)
}

const b64url = (b: Buffer): string => b.toString('base64url')
const unsigned = (mp: Buffer): Buffer => {
  let i = 0
  while (i < mp.length - 1 && mp[i] === 0) i++
  return mp.subarray(i)
}
const leftPad = (b: Buffer, size: number): Buffer =>
  b.length >= size ? b : Buffer.concat([Buffer.alloc(size - b.length), b])
const bigOf = (b: Buffer): bigint => (b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`))
const bufOf = (n: bigint): Buffer => {
  const hex = n.toString(16)
  return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex')
}

interface Curve {
  ssh: string // nistp256
  jwk: string // P-256
  node: string // prime256v1
  size: number // bytes of a coordinate
  hash: string // the ECDSA hash of the key type
}
const CURVES: Curve[] = [
  { ssh: 'nistp256', jwk: 'P-256', node: 'prime256v1', size: 32, hash: 'sha256' },
  { ssh: 'nistp384', jwk: 'P-384', node: 'secp384r1', size: 48, hash: 'sha384' },
  { ssh: 'nistp521', jwk: 'P-521', node: 'secp521r1', size: 66, hash: 'sha512' },
]
const SUPPORTED = new Set(['ssh-ed25519', 'ssh-rsa', ...CURVES.map((c) => `ecdsa-sha2-${c.ssh}`)])

/** The node:crypto key named by an openssh-key-v1 private section. */
function opensshPrivate(r: Reader, type: string): KeyObject {
  if (type === 'ssh-ed25519') {
    const pk = r.bytes()
    const sk = r.bytes()
    if (pk.length !== 32 || sk.length !== 64) throw new KeyFileError('not_a_key')
    return createPrivateKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: b64url(pk), d: b64url(sk.subarray(0, 32)) },
      format: 'jwk',
    })
  }
  if (type === 'ssh-rsa') {
    const [n, e, d, iqmp, p, q] = [r.bytes(), r.bytes(), r.bytes(), r.bytes(), r.bytes(), r.bytes()].map(unsigned) as [
      Buffer, Buffer, Buffer, Buffer, Buffer, Buffer,
    ]
    const D = bigOf(d)
    return createPrivateKey({
      key: {
        kty: 'RSA', n: b64url(n), e: b64url(e), d: b64url(d), p: b64url(p), q: b64url(q),
        dp: b64url(bufOf(D % (bigOf(p) - 1n))), dq: b64url(bufOf(D % (bigOf(q) - 1n))), qi: b64url(iqmp),
      },
      format: 'jwk',
    })
  }
  const curve = CURVES.find((c) => type === `ecdsa-sha2-${c.ssh}`)
  if (curve === undefined || r.text() !== curve.ssh) throw new KeyFileError('not_a_key')
  const point = r.bytes()
  const d = unsigned(r.bytes())
  if (point.length !== 1 + 2 * curve.size || point[0] !== 4) throw new KeyFileError('not_a_key')
  return createPrivateKey({
    key: {
      kty: 'EC', crv: curve.jwk,
      x: b64url(point.subarray(1, 1 + curve.size)), y: b64url(point.subarray(1 + curve.size)),
      d: b64url(leftPad(d, curve.size)),
    },
    format: 'jwk',
  })
}

/** Reads an openssh-key-v1 file: the private key, checked against the public key it records. */
function parseOpenSSH(text: string): KeyObject | AgentKey {
  const start = text.indexOf(OPENSSH_BEGIN)
  const end = text.indexOf(OPENSSH_END)
  if (end < start) throw new KeyFileError('not_a_key')
  const blob = Buffer.from(text.slice(start + OPENSSH_BEGIN.length, end).replace(/\s+/g, ''), 'base64')
  if (blob.subarray(0, OPENSSH_MAGIC.length).toString('latin1') !== OPENSSH_MAGIC) throw new KeyFileError('not_a_key')
  const r = new Reader(blob.subarray(OPENSSH_MAGIC.length))
  const cipher = r.text()
  r.text() // kdf name
  r.bytes() // kdf options
  if (r.uint32() !== 1) throw new KeyFileError('not_a_key') // ssh-keygen writes one key per file
  const pub = r.bytes()
  const type = new Reader(pub).text()
  if (!SUPPORTED.has(type)) throw new KeyFileError('unsupported', type)
  if (cipher !== 'none') return new AgentKey(pub, 'encrypted')
  const priv = new Reader(r.bytes())
  if (priv.uint32() !== priv.uint32()) throw new KeyFileError('not_a_key') // the check integers
  if (priv.text() !== type) throw new KeyFileError('not_a_key')
  const key = opensshPrivate(priv, type)
  if (!publicBlob(key).equals(pub)) throw new KeyFileError('not_a_key')
  return key
}

/** The SSH public key blob of a private key, and its SSH key type. */
function publicBlob(key: KeyObject): Buffer {
  const jwk = createPublicKey(key).export({ format: 'jwk' })
  const raw = (s: string | undefined): Buffer => Buffer.from(s ?? '', 'base64url')
  switch (key.asymmetricKeyType) {
    case 'ed25519':
      return Buffer.concat([sshString('ssh-ed25519'), sshString(raw(jwk.x))])
    case 'rsa':
      return Buffer.concat([sshString('ssh-rsa'), mpint(raw(jwk.e)), mpint(raw(jwk.n))])
    case 'ec': {
      const curve = CURVES.find((c) => c.jwk === jwk.crv)
      if (curve === undefined) throw new KeyFileError('unsupported', `ecdsa ${jwk.crv ?? ''}`.trim())
      const point = Buffer.concat([Buffer.from([4]), leftPad(raw(jwk.x), curve.size), leftPad(raw(jwk.y), curve.size)])
      return Buffer.concat([sshString(`ecdsa-sha2-${curve.ssh}`), sshString(curve.ssh), sshString(point)])
    }
  }
  throw new KeyFileError('unsupported', key.asymmetricKeyType === 'dsa' ? 'ssh-dss' : String(key.asymmetricKeyType))
}

/** Reads a key file's text: openssh-key-v1, or PEM as `ssh-keygen -m PEM` writes it. */
function parseKeyText(text: string): KeyObject | AgentKey {
  if (text.includes(OPENSSH_BEGIN)) return parseOpenSSH(text)
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text)) throw new KeyFileError('encrypted_pem')
    let key: KeyObject
    try {
      key = createPrivateKey(text)
    } catch {
      throw new KeyFileError('not_a_key')
    }
    publicBlob(key) // refuses a key of another type
    return key
  }
  const line = /^\s*((?:ssh-|ecdsa-|sk-)\S+)\s+(AAAA[A-Za-z0-9+/]*={0,2})(\s|$)/.exec(text)
  if (line !== null) {
    const [, lineType = '', b64 = ''] = line
    const pub = Buffer.from(b64, 'base64')
    let type: string
    try {
      type = new Reader(pub).text()
    } catch {
      throw new KeyFileError('not_a_key')
    }
    if (!SUPPORTED.has(type)) throw new KeyFileError('unsupported', type)
    if (type !== lineType) throw new KeyFileError('not_a_key')
    publicKeyOf(pub) // a blob that does not parse is no key
    return new AgentKey(pub, 'public')
  }
  throw new KeyFileError('not_a_key')
}

/** The node:crypto public key of an SSH public key blob of a supported type. */
function publicKeyOf(blob: Buffer): KeyObject {
  const r = new Reader(blob)
  const type = r.text()
  try {
    if (type === 'ssh-ed25519') {
      const x = r.bytes()
      if (x.length !== 32) throw new KeyFileError('not_a_key')
      return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(x) }, format: 'jwk' })
    }
    if (type === 'ssh-rsa') {
      const e = unsigned(r.bytes())
      const n = unsigned(r.bytes())
      return createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' })
    }
    const curve = CURVES.find((c) => type === `ecdsa-sha2-${c.ssh}`)
    if (curve === undefined || r.text() !== curve.ssh) throw new KeyFileError('not_a_key')
    const point = r.bytes()
    if (point.length !== 1 + 2 * curve.size || point[0] !== 4) throw new KeyFileError('not_a_key')
    return createPublicKey({
      key: {
        kty: 'EC', crv: curve.jwk,
        x: b64url(point.subarray(1, 1 + curve.size)), y: b64url(point.subarray(1 + curve.size)),
      },
      format: 'jwk',
    })
  } catch (err) {
    if (err instanceof KeyFileError) throw err
    throw new KeyFileError('not_a_key')
  }
}

/** An agent's SSH_AGENT_FAILURE or other refusal, as opposed to a transport failure. */
class AgentRefused extends Error {}

/** One request to the agent and its answer's reader, the answer's type checked. */
function agentCall(socket: string, request: Buffer, expect: number): Reader {
  const answer = agentExchange(socket, request)
  const type = answer[0]
  if (type === expect) return new Reader(answer.subarray(1))
  if (type === AGENT.FAILURE) throw new AgentRefused()
  throw new AgentError('bad_answer', `message type ${type ?? 'none'}, expected ${expect}`)
}

/** The public key blobs the agent at `socket` holds. */
function agentKeys(socket: string): Buffer[] {
  const r = agentCall(socket, Buffer.from([AGENT.REQUEST_IDENTITIES]), AGENT.IDENTITIES_ANSWER)
  try {
    const n = r.uint32()
    const keys: Buffer[] = []
    for (let i = 0; i < n; i++) {
      keys.push(r.bytes())
      r.bytes() // comment
    }
    return keys
  } catch {
    throw new AgentError('bad_answer', 'a malformed list of keys')
  }
}

/** Where signatures come from: the private key here, or the ssh-agent that holds it. */
type Backend = { key: KeyObject } | { socket: string; path: string }

/**
 * A key that signs registry content: an OpenSSH private key file as ssh-keygen writes it (or
 * PEM, `-m PEM`), ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa. An encrypted private key
 * or a public key file (`.pub`) signs through the ssh-agent at SSH_AUTH_SOCK, which must hold it.
 */
export class SigningKey {
  /** The key's SSH type (`ssh-ed25519`, …). */
  readonly type: string
  /** Its fingerprint as `ssh-keygen -l` prints it: `SHA256:…`. */
  readonly fingerprint: string
  private readonly publicKey: KeyObject

  private constructor(
    private readonly pub: Buffer,
    private readonly backend: Backend,
  ) {
    this.type = new Reader(pub).text()
    this.fingerprint = `SHA256:${createHash('sha256').update(pub).digest('base64').replace(/=+$/, '')}`
    this.publicKey = 'key' in backend ? createPublicKey(backend.key) : publicKeyOf(pub)
  }

  /**
   * Reads the key file at `path`; for an encrypted or public key, checks that the ssh-agent at
   * `agentSocket` (default: SSH_AUTH_SOCK) holds it. Throws an Error that says what is wrong and
   * what to do.
   */
  static load(path: string, agentSocket: string | undefined = process.env['SSH_AUTH_SOCK']): SigningKey {
    let data: Buffer
    try {
      data = readFileSync(path)
    } catch (err) {
      throw new Error(`signing key ${JSON.stringify(path)}: ${(err as Error).message}`)
    }
    let parsed: KeyObject | AgentKey
    try {
      if (data.length > MAX_KEY_FILE) throw new KeyFileError('not_a_key')
      parsed = parseKeyText(data.toString('latin1'))
      if (!(parsed instanceof AgentKey)) return new SigningKey(publicBlob(parsed), { key: parsed })
      if (!agentSocket) throw new KeyFileError(parsed.why)
    } catch (err) {
      if (err instanceof KeyFileError) throw new Error(keyMessage(err.kind, path, err.keyType))
      throw new Error(keyMessage('not_a_key', path))
    }
    const key = new SigningKey(parsed.pub, { socket: agentSocket, path })
    let held: Buffer[]
    try {
      held = agentKeys(agentSocket)
    } catch (err) {
      throw key.agentError(err)
    }
    if (!held.some((k) => k.equals(parsed.pub))) {
      throw new Error(agentMessage('not_in_agent', path, { socket: agentSocket, count: held.length, fingerprint: key.fingerprint }))
    }
    return key
  }

  /** The armored SSHSIG signature of `content` (its UTF-8 bytes) for namespace iii-skills. */
  sign(content: string): string {
    const hashed = createHash('sha512').update(content, 'utf8').digest()
    const signed = Buffer.concat([
      Buffer.from('SSHSIG'), sshString(SIGNATURE_NAMESPACE), sshString(''), sshString('sha512'), sshString(hashed),
    ])
    const sig = 'key' in this.backend ? this.signHere(this.backend.key, signed) : this.signInAgent(this.backend, signed)
    // A faulty computation must not leave the process (an RSA fault can leak the key), and an
    // agent's signature must be one over these bytes by this key.
    if (!this.verifies(signed, sig)) {
      if ('socket' in this.backend) {
        const { socket, path } = this.backend
        throw new Error(agentMessage('bad_signature', path, { socket, fingerprint: this.fingerprint }))
      }
      throw new Error(`signing with key ${this.fingerprint} made a signature that does not verify`)
    }
    const version = Buffer.alloc(4)
    version.writeUInt32BE(1)
    const blob = Buffer.concat([
      Buffer.from('SSHSIG'), version, sshString(this.pub), sshString(SIGNATURE_NAMESPACE), sshString(''),
      sshString('sha512'), sshString(sig),
    ])
    const b64 = blob.toString('base64')
    const lines: string[] = []
    for (let i = 0; i < b64.length; i += 70) lines.push(b64.slice(i, i + 70))
    return `${ARMOR_BEGIN}\n${lines.join('\n')}\n${ARMOR_END}\n`
  }

  /** An SSH signature blob (algorithm name, signature) made with the private key here. */
  private signHere(key: KeyObject, signed: Buffer): Buffer {
    if (this.type === 'ssh-ed25519') return Buffer.concat([sshString('ssh-ed25519'), sshString(sign(null, signed, key))])
    if (this.type === 'ssh-rsa') return Buffer.concat([sshString('rsa-sha2-512'), sshString(sign('sha512', signed, key))])
    const curve = CURVES.find((c) => this.type === `ecdsa-sha2-${c.ssh}`) as Curve
    const rs = sign(curve.hash, signed, { key, dsaEncoding: 'ieee-p1363' })
    const inner = Buffer.concat([mpint(rs.subarray(0, curve.size)), mpint(rs.subarray(curve.size))])
    return Buffer.concat([sshString(this.type), sshString(inner)])
  }

  /** An SSH signature blob the ssh-agent makes (RSA: rsa-sha2-512). */
  private signInAgent(agent: { socket: string; path: string }, signed: Buffer): Buffer {
    const flags = Buffer.alloc(4)
    flags.writeUInt32BE(this.type === 'ssh-rsa' ? AGENT.RSA_SHA2_512 : 0)
    const request = Buffer.concat([Buffer.from([AGENT.SIGN_REQUEST]), sshString(this.pub), sshString(signed), flags])
    try {
      return agentCall(agent.socket, request, AGENT.SIGN_RESPONSE).bytes()
    } catch (err) {
      throw this.agentError(err)
    }
  }

  /** The Error of a failed exchange with this key's agent. */
  private agentError(err: unknown): Error {
    if (!('socket' in this.backend)) return err as Error
    const { socket, path } = this.backend
    if (err instanceof AgentRefused) return new Error(agentMessage('refused', path, { socket, fingerprint: this.fingerprint }))
    if (err instanceof AgentError) return new Error(agentMessage(err.kind, path, { socket, reason: err.reason }))
    return new Error(agentMessage('bad_answer', path, { socket, reason: 'a malformed message' }))
  }

  /** Whether `sigBlob` is this key's signature over `signed`, with the algorithm expected of it. */
  private verifies(signed: Buffer, sigBlob: Buffer): boolean {
    try {
      const r = new Reader(sigBlob)
      const algorithm = r.text()
      const raw = r.bytes()
      const pub = this.publicKey
      if (this.type === 'ssh-ed25519') return algorithm === 'ssh-ed25519' && verify(null, signed, pub, raw)
      if (this.type === 'ssh-rsa') return algorithm === 'rsa-sha2-512' && verify('sha512', signed, pub, raw)
      const curve = CURVES.find((c) => this.type === `ecdsa-sha2-${c.ssh}`) as Curve
      if (algorithm !== this.type) return false
      const inner = new Reader(raw)
      const [rr, ss] = [unsigned(inner.bytes()), unsigned(inner.bytes())]
      if (rr.length > curve.size || ss.length > curve.size) return false
      const rs = Buffer.concat([leftPad(rr, curve.size), leftPad(ss, curve.size)])
      return verify(curve.hash, signed, { key: pub, dsaEncoding: 'ieee-p1363' }, rs)
    } catch {
      return false
    }
  }
}

/** A prompt definition as `prompts::register` takes it (the signed part). */
export interface PromptDefinitionContent {
  description: string
  function_id: string
  arguments?: readonly { name: string; description?: string | null; required?: boolean }[]
}

/**
 * The canonical JSON of a prompt definition: the bytes its signature covers and its version's
 * sha256 digests (docs/trust.md). Keys sorted, no whitespace; an argument's description only
 * when it has one (`""` kept), `required` always.
 */
export function canonicalPrompt(definition: PromptDefinitionContent): string {
  // JSON.stringify writes keys in insertion order: build each object in sorted key order.
  const args = (definition.arguments ?? []).map((a) =>
    a.description === undefined || a.description === null
      ? { name: a.name, required: a.required ?? false }
      : { description: a.description, name: a.name, required: a.required ?? false },
  )
  return JSON.stringify({ arguments: args, description: definition.description, function_id: definition.function_id })
}

/** The canonical JSON of the prompt a publisher registers. */
export function promptContent(description: string, functionId: string, args: readonly PromptArgument[]): string {
  return canonicalPrompt({ description, function_id: functionId, arguments: args })
}
