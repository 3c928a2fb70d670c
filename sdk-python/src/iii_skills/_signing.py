"""Signed versions (docs/trust.md, docs/publishers.md "Signing").

A publisher given a key signs the exact bytes it registers in OpenSSH's
SSHSIG format (what ``ssh-keygen -Y sign -n iii-skills`` writes) and sends
the armored signature with the register: a skill's body, a prompt's
canonical JSON. Keys are read with the ``cryptography`` package
(``load_ssh_private_key`` for OpenSSH files, ``load_pem_private_key`` for
``ssh-keygen -m PEM`` ones); the SSHSIG blob is built here. A public key
file (``.pub``) or an encrypted private key signs through the ssh-agent at
``SSH_AUTH_SOCK``, which must hold the key (as ``ssh-keygen -Y sign`` does);
each signature the agent makes is checked against the public key before use.
The Go and Node publishers word their key errors the same way
(conformance/vectors/signing.json).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from . import _agent

#: The SSHSIG namespace of signatures over registry content.
SIGNATURE_NAMESPACE = "iii-skills"

_ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_ARMOR_END = "-----END SSH SIGNATURE-----"
_OPENSSH_BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----"
_OPENSSH_END = "-----END OPENSSH PRIVATE KEY-----"
_OPENSSH_MAGIC = b"openssh-key-v1\x00"
#: The largest key ssh-keygen makes (RSA 16384 bits) is about 12 KiB.
_MAX_KEY_FILE = 1 << 20

#: The ECDSA curves: SSH name, and the hash its signatures use.
_CURVES: dict[str, tuple[str, hashes.HashAlgorithm]] = {
    "secp256r1": ("nistp256", hashes.SHA256()),
    "secp384r1": ("nistp384", hashes.SHA384()),
    "secp521r1": ("nistp521", hashes.SHA512()),
}

KeyErrorKind = Literal["encrypted", "public", "encrypted_pem", "not_a_key", "unsupported"]


def key_message(kind: KeyErrorKind, path: str, key_type: str = "") -> str:
    """The error of a key file the publisher cannot sign with (the same words in Go and Node)."""
    p = json.dumps(path, ensure_ascii=False)
    if kind == "encrypted":
        return (
            f"signing key {p} is encrypted (it has a passphrase) and SSH_AUTH_SOCK is not set: load the key "
            "into an ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; "
            f"or sign with ssh-keygen -Y sign -n {SIGNATURE_NAMESPACE} (or skills sign) and pass the signature"
        )
    if kind == "public":
        return (
            f"signing key {p} is a public key and SSH_AUTH_SOCK is not set: load its private half into an "
            "ssh-agent (ssh-add FILE) and set SSH_AUTH_SOCK, and the publisher signs through the agent; "
            "or give the private key file (the one without .pub)"
        )
    if kind == "encrypted_pem":
        return (
            f"signing key {p} is an encrypted PEM key, whose public key cannot be read without its passphrase: "
            "give its public key file (.pub) to sign through the ssh-agent that holds the key, or rewrite it in "
            "the OpenSSH format (ssh-keygen -p -f FILE), which records the public key"
        )
    if kind == "unsupported":
        return (
            f"signing key {p} is of type {key_type}: expected ssh-ed25519, ecdsa-sha2-nistp256, "
            "ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa"
        )
    return (
        f"signing key {p} is not an OpenSSH private key: expected the file ssh-keygen writes "
        f"({_OPENSSH_BEGIN})"
    )


AgentErrorKind = Literal["unreachable", "not_in_agent", "refused", "bad_answer", "bad_signature"]


def agent_message(
    kind: AgentErrorKind, path: str, socket: str, fingerprint: str = "", count: int = 0, reason: str = ""
) -> str:
    """The error of signing through the ssh-agent (the same words in Node; Go's sshsig says the same)."""
    head = (
        f"signing key {json.dumps(path, ensure_ascii=False)}: "
        f"the ssh-agent at {json.dumps(socket, ensure_ascii=False)}"
    )
    if kind == "unreachable":
        return (
            f'{head} cannot be reached ({reason}): start one (eval "$(ssh-agent)"), load the key (ssh-add FILE) '
            "and set SSH_AUTH_SOCK to its socket"
        )
    if kind == "not_in_agent":
        return f"{head} holds {count} keys, none of them {fingerprint} (add it with ssh-add)"
    if kind == "refused":
        return (
            f"{head} refused to sign with {fingerprint}: check that it still holds the key (ssh-add -l), "
            "and confirm the request if the key was added with ssh-add -c"
        )
    if kind == "bad_signature":
        return f"{head} made a signature with {fingerprint} that does not verify against the key"
    return f"{head} answered with no valid reply: {reason}"


class _AgentKey:
    """A key file whose private half is not here: its public key blob, signed with by an ssh-agent."""

    def __init__(self, public: bytes, why: Literal["encrypted", "public"]) -> None:
        self.public = public
        self.why: Literal["encrypted", "public"] = why


class _KeyFileError(Exception):
    def __init__(self, kind: KeyErrorKind, key_type: str = "") -> None:
        super().__init__(kind)
        self.kind: KeyErrorKind = kind
        self.key_type = key_type


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""
    return _string(raw)


def _openssh_header(text: str) -> tuple[str, str, bytes]:
    """The cipher, key type and public key blob an openssh-key-v1 file records (before decrypting anything)."""
    start, end = text.find(_OPENSSH_BEGIN), text.find(_OPENSSH_END)
    if end < start:
        raise _KeyFileError("not_a_key")
    try:
        blob = base64.b64decode("".join(text[start + len(_OPENSSH_BEGIN) : end].split()), validate=True)
    except (binascii.Error, ValueError):
        raise _KeyFileError("not_a_key") from None
    if not blob.startswith(_OPENSSH_MAGIC):
        raise _KeyFileError("not_a_key")
    at = len(_OPENSSH_MAGIC)

    def take() -> bytes:
        nonlocal at
        if at + 4 > len(blob):
            raise _KeyFileError("not_a_key")
        (n,) = struct.unpack(">I", blob[at : at + 4])
        if at + 4 + n > len(blob):
            raise _KeyFileError("not_a_key")
        out = blob[at + 4 : at + 4 + n]
        at += 4 + n
        return out

    cipher = take().decode("latin-1")
    take()  # kdf name
    take()  # kdf options
    if at + 4 > len(blob) or struct.unpack(">I", blob[at : at + 4])[0] != 1:
        raise _KeyFileError("not_a_key")  # ssh-keygen writes one key per file
    at += 4
    public = take()
    if len(public) < 4:
        raise _KeyFileError("not_a_key")
    (n,) = struct.unpack(">I", public[:4])
    return cipher, public[4 : 4 + n].decode("latin-1"), public


_PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
_SUPPORTED = {"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"}
_PUBLIC_LINE = re.compile(r"^\s*((?:ssh-|ecdsa-|sk-)\S+)\s+(AAAA[A-Za-z0-9+/]*={0,2})(\s|$)")
_PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey


def _public_key_of(blob: bytes) -> _PublicKey:
    """The public key of an SSH public key blob of a supported type."""
    if len(blob) < 4:
        raise _KeyFileError("not_a_key")
    (n,) = struct.unpack(">I", blob[:4])
    key_type = blob[4 : 4 + n].decode("latin-1")
    if key_type not in _SUPPORTED:
        raise _KeyFileError("unsupported", key_type)
    try:
        key = serialization.load_ssh_public_key(key_type.encode("latin-1") + b" " + base64.b64encode(blob))
    except (ValueError, UnsupportedAlgorithm):
        raise _KeyFileError("not_a_key") from None
    if not isinstance(key, ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
        raise _KeyFileError("unsupported", key_type)
    return key


def _parse_key(data: bytes) -> _PrivateKey | _AgentKey:
    text = data.decode("latin-1")
    key: Any
    if _OPENSSH_BEGIN in text:
        cipher, key_type, public = _openssh_header(text)
        if key_type not in _SUPPORTED:
            raise _KeyFileError("unsupported", key_type)
        if cipher != "none":
            _public_key_of(public)
            return _AgentKey(public, "encrypted")
        try:
            key = serialization.load_ssh_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise _KeyFileError("not_a_key") from None
    elif re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", text):
        if "-----BEGIN ENCRYPTED PRIVATE KEY-----" in text or "Proc-Type: 4,ENCRYPTED" in text:
            raise _KeyFileError("encrypted_pem")
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise _KeyFileError("encrypted_pem") from None
        except (ValueError, UnsupportedAlgorithm):
            raise _KeyFileError("not_a_key") from None
    elif line := _PUBLIC_LINE.match(text):
        public = base64.b64decode(line.group(2))
        _public_key_of(public)
        (n,) = struct.unpack(">I", public[:4])
        if public[4 : 4 + n].decode("latin-1") != line.group(1):
            raise _KeyFileError("not_a_key")
        return _AgentKey(public, "public")
    else:
        raise _KeyFileError("not_a_key")
    if isinstance(key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey):
        if key.curve.name not in _CURVES:
            raise _KeyFileError("unsupported", f"ecdsa {key.curve.name}")
        return key
    raise _KeyFileError("unsupported", "ssh-dss" if isinstance(key, dsa.DSAPrivateKey) else type(key).__name__)


class SigningKey:
    """A key that signs registry content (SSHSIG, namespace iii-skills).

    An OpenSSH private key file as ssh-keygen writes it (or PEM, ``-m PEM``):
    ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa. An encrypted private
    key or a public key file (``.pub``) signs through the ssh-agent at
    ``SSH_AUTH_SOCK``, which must hold it.
    """

    def __init__(self, key: _PrivateKey | None, public: bytes, agent: tuple[str, str] | None = None) -> None:
        self._key = key
        self._agent = agent  # (socket, key file path) when the agent signs
        self._public = public
        self._public_key = key.public_key() if key is not None else _public_key_of(public)
        (n,) = struct.unpack(">I", public[:4])
        #: The key's SSH type (``ssh-ed25519``, …).
        self.type = public[4 : 4 + n].decode("ascii")
        digest = base64.b64encode(hashlib.sha256(public).digest()).decode("ascii").rstrip("=")
        #: Its fingerprint as ``ssh-keygen -l`` prints it: ``SHA256:…``.
        self.fingerprint = "SHA256:" + digest

    @classmethod
    def load(cls, path: str | Path, agent_socket: str | None = None) -> SigningKey:
        """Read the key file at ``path``.

        For an encrypted or public key, check that the ssh-agent at
        ``agent_socket`` (default: ``SSH_AUTH_SOCK``) holds it.

        Raises:
            ValueError: the file is no key the publisher can sign with, or the
                agent cannot sign with it, saying why and what to do.
        """
        shown = str(path)
        if agent_socket is None:
            agent_socket = os.environ.get("SSH_AUTH_SOCK", "")
        try:
            with open(path, "rb") as f:
                data = f.read(_MAX_KEY_FILE + 1)
        except OSError as exc:
            raise ValueError(f"signing key {json.dumps(shown, ensure_ascii=False)}: {exc}") from None
        try:
            if len(data) > _MAX_KEY_FILE:
                raise _KeyFileError("not_a_key")
            parsed = _parse_key(data)
            if not isinstance(parsed, _AgentKey):
                return cls(parsed, _public_blob(parsed))
            if not agent_socket:
                raise _KeyFileError(parsed.why)
        except _KeyFileError as exc:
            raise ValueError(key_message(exc.kind, shown, exc.key_type)) from None
        key = cls(None, parsed.public, (agent_socket, shown))
        try:
            held = _agent_keys(agent_socket)
        except _agent.AgentError as exc:
            raise key._agent_error(exc) from None
        if parsed.public not in held:
            raise ValueError(
                agent_message("not_in_agent", shown, agent_socket, fingerprint=key.fingerprint, count=len(held))
            )
        return key

    def sign(self, content: str) -> str:
        """The armored SSHSIG signature of ``content`` (its UTF-8 bytes).

        Raises:
            ValueError: the ssh-agent could not sign, saying why.
        """
        signed = (
            b"SSHSIG"
            + _string(SIGNATURE_NAMESPACE.encode())
            + _string(b"")
            + _string(b"sha512")
            + _string(hashlib.sha512(content.encode("utf-8")).digest())
        )
        sig = self._sign_here(self._key, signed) if self._key is not None else self._sign_in_agent(signed)
        # A faulty RSA computation can leak the key, and an agent's signature
        # must be one over these bytes by this key: check before it leaves.
        if not self._verifies(signed, sig):
            if self._agent is not None:
                socket, shown = self._agent
                raise ValueError(agent_message("bad_signature", shown, socket, fingerprint=self.fingerprint))
            raise ValueError(f"signing with key {self.fingerprint} made a signature that does not verify")
        blob = (
            b"SSHSIG"
            + struct.pack(">I", 1)
            + _string(self._public)
            + _string(SIGNATURE_NAMESPACE.encode())
            + _string(b"")
            + _string(b"sha512")
            + _string(sig)
        )
        b64 = base64.b64encode(blob).decode("ascii")
        lines = [b64[i : i + 70] for i in range(0, len(b64), 70)]
        return "\n".join([_ARMOR_BEGIN, *lines, _ARMOR_END]) + "\n"

    def _sign_here(self, key: _PrivateKey, signed: bytes) -> bytes:
        """An SSH signature blob (algorithm name, signature) made with the private key here."""
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return _string(b"ssh-ed25519") + _string(key.sign(signed))
        if isinstance(key, rsa.RSAPrivateKey):
            return _string(b"rsa-sha2-512") + _string(key.sign(signed, padding.PKCS1v15(), hashes.SHA512()))
        _, hash_algorithm = _CURVES[key.curve.name]
        r, s = decode_dss_signature(key.sign(signed, ec.ECDSA(hash_algorithm)))
        return _string(self.type.encode()) + _string(_mpint(r) + _mpint(s))

    def _sign_in_agent(self, signed: bytes) -> bytes:
        """An SSH signature blob the ssh-agent makes (RSA: rsa-sha2-512)."""
        assert self._agent is not None
        flags = _agent.SSH_AGENT_RSA_SHA2_512 if self.type == "ssh-rsa" else 0
        request = (
            bytes([_agent.SSH2_AGENTC_SIGN_REQUEST]) + _string(self._public) + _string(signed) + struct.pack(">I", flags)
        )
        try:
            answer = _agent.exchange(self._agent[0], request, _agent.SSH2_AGENT_SIGN_RESPONSE)
            sig, _ = _take(answer, 0)
        except _agent.AgentError as exc:
            raise self._agent_error(exc) from None
        return sig

    def _agent_error(self, exc: _agent.AgentError) -> ValueError:
        assert self._agent is not None
        socket, shown = self._agent
        if exc.kind == "refused":
            return ValueError(agent_message("refused", shown, socket, fingerprint=self.fingerprint))
        return ValueError(agent_message(exc.kind, shown, socket, reason=exc.reason))

    def _verifies(self, signed: bytes, sig_blob: bytes) -> bool:
        """Whether ``sig_blob`` is this key's signature over ``signed``, with the algorithm expected of it."""
        try:
            algorithm, at = _take(sig_blob, 0)
            raw, _ = _take(sig_blob, at)
            pub = self._public_key
            if isinstance(pub, ed25519.Ed25519PublicKey):
                if algorithm != b"ssh-ed25519":
                    return False
                pub.verify(raw, signed)
            elif isinstance(pub, rsa.RSAPublicKey):
                if algorithm != b"rsa-sha2-512":
                    return False
                pub.verify(raw, signed, padding.PKCS1v15(), hashes.SHA512())
            else:
                if algorithm != self.type.encode():
                    return False
                r, at = _take(raw, 0)
                s, _ = _take(raw, at)
                _, hash_algorithm = _CURVES[pub.curve.name]
                der = encode_dss_signature(int.from_bytes(r, "big"), int.from_bytes(s, "big"))
                pub.verify(der, signed, ec.ECDSA(hash_algorithm))
        except (_agent.AgentError, InvalidSignature, ValueError):
            return False
        return True


def _public_blob(key: _PrivateKey) -> bytes:
    """The SSH public key blob of a private key."""
    line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return base64.b64decode(line.split()[1])


def _take(data: bytes, at: int) -> tuple[bytes, int]:
    """The SSH string at ``at`` and the offset after it; AgentError when it runs past the end."""
    if at + 4 > len(data):
        raise _agent.AgentError("bad_answer", "a malformed message")
    (n,) = struct.unpack(">I", data[at : at + 4])
    if at + 4 + n > len(data):
        raise _agent.AgentError("bad_answer", "a malformed message")
    return data[at + 4 : at + 4 + n], at + 4 + n


def _agent_keys(socket: str) -> list[bytes]:
    """The public key blobs the agent at ``socket`` holds."""
    answer = _agent.exchange(socket, bytes([_agent.SSH2_AGENTC_REQUEST_IDENTITIES]), _agent.SSH2_AGENT_IDENTITIES_ANSWER)
    if len(answer) < 4:
        raise _agent.AgentError("bad_answer", "a malformed list of keys")
    (n,) = struct.unpack(">I", answer[:4])
    at = 4
    keys = []
    for _ in range(n):
        blob, at = _take(answer, at)
        _, at = _take(answer, at)  # comment
        keys.append(blob)
    return keys


def canonical_prompt(
    description: str, function_id: str, arguments: Iterable[Mapping[str, Any]] = ()
) -> str:
    """The canonical JSON of a prompt definition (docs/trust.md).

    The bytes a prompt's signature covers and its version's sha256 digests:
    keys sorted, no whitespace, non-ASCII as is. ``arguments`` are the
    ``prompts::register`` entries (``name``, ``description``, ``required``):
    a description only when it is set (``""`` kept), ``required`` always.
    """
    args = []
    for a in arguments:
        entry: dict[str, Any] = {"name": a["name"], "required": bool(a.get("required", False))}
        if a.get("description") is not None:
            entry["description"] = a["description"]
        args.append(entry)
    return json.dumps(
        {"arguments": args, "description": description, "function_id": function_id},
        ensure_ascii=False,
        separators=(",", ":"),
        sort_keys=True,
    )


__all__ = ["SIGNATURE_NAMESPACE", "SigningKey", "agent_message", "canonical_prompt", "key_message"]
