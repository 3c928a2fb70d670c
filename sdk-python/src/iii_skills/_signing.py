"""Signed versions (docs/trust.md, docs/publishers.md "Signing").

A publisher given a key signs the exact bytes it registers in OpenSSH's
SSHSIG format (what ``ssh-keygen -Y sign -n iii-skills`` writes) and sends
the armored signature with the register: a skill's body, a prompt's
canonical JSON. Keys are read with the ``cryptography`` package
(``load_ssh_private_key`` for OpenSSH files, ``load_pem_private_key`` for
``ssh-keygen -m PEM`` ones); the SSHSIG blob is built here. The Go and Node
publishers word their key errors the same way
(conformance/vectors/signing.json).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

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

KeyErrorKind = Literal["encrypted", "public", "not_a_key", "unsupported"]


def key_message(kind: KeyErrorKind, path: str, key_type: str = "") -> str:
    """The error of a key file the publisher cannot sign with (the same words in Go and Node)."""
    p = json.dumps(path, ensure_ascii=False)
    if kind == "encrypted":
        return (
            f"signing key {p} is encrypted (it has a passphrase), and the publisher reads "
            'unencrypted keys only: give it a key without a passphrase (ssh-keygen -t ed25519 -N "" '
            f"-f FILE), or sign with ssh-keygen -Y sign -n {SIGNATURE_NAMESPACE} (or skills sign) "
            "and pass the signature"
        )
    if kind == "public":
        return f"signing key {p} is a public key: give the private key file (the one without .pub)"
    if kind == "unsupported":
        return (
            f"signing key {p} is of type {key_type}: expected ssh-ed25519, ecdsa-sha2-nistp256, "
            "ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa"
        )
    return (
        f"signing key {p} is not an OpenSSH private key: expected the file ssh-keygen writes "
        f"({_OPENSSH_BEGIN})"
    )


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


def _openssh_header(text: str) -> tuple[str, str]:
    """The cipher and key type an openssh-key-v1 file records (before decrypting anything)."""
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
    return cipher, public[4 : 4 + n].decode("latin-1")


_PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
_SUPPORTED = {"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"}
_PUBLIC_LINE = re.compile(r"^\s*(ssh-|ecdsa-|sk-)\S+\s+AAAA")


def _parse_key(data: bytes) -> _PrivateKey:
    text = data.decode("latin-1")
    key: Any
    if _OPENSSH_BEGIN in text:
        cipher, key_type = _openssh_header(text)
        if cipher != "none":
            raise _KeyFileError("encrypted")
        if key_type not in _SUPPORTED:
            raise _KeyFileError("unsupported", key_type)
        try:
            key = serialization.load_ssh_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise _KeyFileError("not_a_key") from None
    elif re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", text):
        if "-----BEGIN ENCRYPTED PRIVATE KEY-----" in text or "Proc-Type: 4,ENCRYPTED" in text:
            raise _KeyFileError("encrypted")
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise _KeyFileError("encrypted") from None
        except (ValueError, UnsupportedAlgorithm):
            raise _KeyFileError("not_a_key") from None
    elif _PUBLIC_LINE.match(text):
        raise _KeyFileError("public")
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
    """A private key that signs registry content (SSHSIG, namespace iii-skills).

    An OpenSSH private key file as ssh-keygen writes it (or PEM, ``-m PEM``):
    ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa, unencrypted.
    """

    def __init__(self, key: _PrivateKey) -> None:
        self._key = key
        line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        key_type, b64 = line.split()[:2]
        #: The key's SSH type (``ssh-ed25519``, …).
        self.type = key_type.decode("ascii")
        self._public = base64.b64decode(b64)
        digest = base64.b64encode(hashlib.sha256(self._public).digest()).decode("ascii").rstrip("=")
        #: Its fingerprint as ``ssh-keygen -l`` prints it: ``SHA256:…``.
        self.fingerprint = "SHA256:" + digest

    @classmethod
    def load(cls, path: str | Path) -> SigningKey:
        """Read the key file at ``path``.

        Raises:
            ValueError: the file is no key the publisher can sign with (an
                encrypted one included), saying why and what to do.
        """
        shown = str(path)
        try:
            with open(path, "rb") as f:
                data = f.read(_MAX_KEY_FILE + 1)
        except OSError as exc:
            raise ValueError(f"signing key {json.dumps(shown, ensure_ascii=False)}: {exc}") from None
        try:
            if len(data) > _MAX_KEY_FILE:
                raise _KeyFileError("not_a_key")
            return cls(_parse_key(data))
        except _KeyFileError as exc:
            raise ValueError(key_message(exc.kind, shown, exc.key_type)) from None

    def sign(self, content: str) -> str:
        """The armored SSHSIG signature of ``content`` (its UTF-8 bytes)."""
        signed = (
            b"SSHSIG"
            + _string(SIGNATURE_NAMESPACE.encode())
            + _string(b"")
            + _string(b"sha512")
            + _string(hashlib.sha512(content.encode("utf-8")).digest())
        )
        key = self._key
        if isinstance(key, ed25519.Ed25519PrivateKey):
            raw = key.sign(signed)
            key.public_key().verify(raw, signed)
            sig = _string(b"ssh-ed25519") + _string(raw)
        elif isinstance(key, rsa.RSAPrivateKey):
            raw = key.sign(signed, padding.PKCS1v15(), hashes.SHA512())
            # A faulty RSA computation can leak the key: check before it leaves.
            key.public_key().verify(raw, signed, padding.PKCS1v15(), hashes.SHA512())
            sig = _string(b"rsa-sha2-512") + _string(raw)
        else:
            _, hash_algorithm = _CURVES[key.curve.name]
            der = key.sign(signed, ec.ECDSA(hash_algorithm))
            key.public_key().verify(der, signed, ec.ECDSA(hash_algorithm))
            r, s = decode_dss_signature(der)
            sig = _string(self.type.encode()) + _string(_mpint(r) + _mpint(s))
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


__all__ = ["SIGNATURE_NAMESPACE", "SigningKey", "canonical_prompt", "key_message"]
