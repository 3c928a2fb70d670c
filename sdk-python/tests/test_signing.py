"""Signing (docs/trust.md).

Every key type ssh-keygen makes signs what the publisher registers, and the
real ``ssh-keygen -Y verify`` accepts each signature over the exact bytes the
registry checks; key files the publisher cannot use are refused with the
words Go and Node use (conformance/vectors/signing.json); against a registry
that requires signatures, signed content is accepted with its signer, again
after the engine restarts, and unsigned content is refused ``UNSIGNED``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from iii_skills import Backoff, Publisher, canonical_prompt
from iii_skills._signing import SigningKey, key_message

from .conftest import Server, free_port, new_client, wait_until
from .fakes import FakeClient

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "conformance" / "vectors" / "signing.json").read_text("utf-8")
)
KEYGEN = shutil.which("ssh-keygen")
needs_keygen = pytest.mark.skipif(KEYGEN is None, reason="not run: ssh-keygen not found (Debian package openssh-client)")


def test_canonical_prompt_vectors() -> None:
    assert len(VECTORS["canonical_prompt"]) >= 3
    for case in VECTORS["canonical_prompt"]:
        assert canonical_prompt(case["description"], case["function_id"], case["arguments"]) == case["canonical"]


def test_key_error_vectors() -> None:
    path = "/keys/it's \"mine\""
    for case in VECTORS["key_errors"]:
        want = case["message"].replace("{path}", json.dumps(path))
        assert key_message(case["kind"], path, case.get("key_type", "")) == want


@pytest.fixture
def keydir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="iii-skills-py-signing-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def keygen(d: Path, name: str, kind: str, bits: str = "", *extra: str) -> tuple[Path, str]:
    """A key ssh-keygen makes: its file and its allowed_signers line."""
    path = d / name
    args = ["ssh-keygen", "-q", "-t", kind, "-C", f"{name}@test", "-f", str(path), *extra]
    if bits:
        args += ["-b", bits]
    if "-N" not in extra:
        args += ["-N", ""]
    subprocess.run(args, check=True, capture_output=True)
    key_type, b64 = path.with_suffix(".pub").read_text().split()[:2]
    return path, f'{name}@example.com namespaces="iii-skills" {key_type} {b64}\n'


def keygen_verifies(d: Path, allowed: str, principal: str, signature: str, content: str) -> bool:
    (d / "allowed_signers").write_text(allowed)
    (d / "content.sig").write_text(signature)
    r = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(d / "allowed_signers"), "-I", principal, "-n", "iii-skills",
         "-s", str(d / "content.sig")],
        input=content.encode("utf-8"),
        capture_output=True,
        check=False,
    )
    return r.returncode == 0


class ReviewArgs(BaseModel):
    diff: str = Field(description="the diff")
    style: str | None = None


def sent(client: FakeClient, function_id: str) -> dict[str, Any]:
    for fid, payload in client.calls:
        if fid == function_id:
            return dict(payload)
    raise AssertionError(f"no {function_id} call in {client.calls}")


@needs_keygen
@pytest.mark.parametrize(
    ("name", "kind", "bits", "extra"),
    [
        ("ed25519", "ed25519", "", ()),
        ("ecdsa256", "ecdsa", "256", ()),
        ("ecdsa384", "ecdsa", "384", ()),
        ("ecdsa521", "ecdsa", "521", ()),
        ("rsa", "rsa", "2048", ()),
        ("rsapem", "rsa", "2048", ("-m", "PEM")),
        ("ecdsapem", "ecdsa", "521", ("-m", "PEM")),
    ],
)
def test_signatures_verify_with_ssh_keygen(keydir: Path, name: str, kind: str, bits: str, extra: tuple[str, ...]) -> None:
    key, line = keygen(keydir, name, kind, bits, *extra)
    client = FakeClient()
    publisher = Publisher(client, signing_key=key, backoff=Backoff(initial_delay=0.01, give_up_after=5))
    body = '# Signed\n\nü, "quotes" and no trailing newline'
    publisher.skill("acme/doc", body)

    def review(args: ReviewArgs) -> str:
        return "x"

    prompt = publisher.prompt("acme-review", 'Review <a> & "b"\n', review)
    assert publisher.start().registered
    principal = f"{name}@example.com"
    skill = sent(client, "skills::register")
    assert skill["signature"].startswith("-----BEGIN SSH SIGNATURE-----\n")
    assert keygen_verifies(keydir, line, principal, skill["signature"], body)
    assert not keygen_verifies(keydir, line, principal, skill["signature"], body + "\n")
    canonical = (
        '{"arguments":[{"description":"the diff","name":"diff","required":true},{"name":"style","required":false}],'
        f'"description":"Review <a> & \\"b\\"\\n","function_id":"{prompt.function_id}"}}'
    )
    assert keygen_verifies(keydir, line, principal, sent(client, "prompts::register")["signature"], canonical)
    publisher.close()


@needs_keygen
def test_a_given_signature_is_sent_as_it_is(keydir: Path) -> None:
    key, _ = keygen(keydir, "given", "ed25519")
    client = FakeClient()
    publisher = Publisher(client, signing_key=key)
    publisher.skill("a/b", "# b\n", signature="GIVEN")
    assert publisher.start().registered
    assert sent(client, "skills::register")["signature"] == "GIVEN"
    publisher.close()


@needs_keygen
def test_key_files_it_cannot_sign_with_are_refused(keydir: Path) -> None:
    messages = {c["kind"]: c["message"] for c in VECTORS["key_errors"]}
    enc, _ = keygen(keydir, "enc", "ed25519", "", "-N", "correct horse")
    enc_pem, _ = keygen(keydir, "encpem", "rsa", "2048", "-N", "correct horse", "-m", "PEM")
    plain, _ = keygen(keydir, "plain", "ed25519")
    (keydir / "junk").write_text("not a key\n")
    cases = [(enc, "encrypted"), (enc_pem, "encrypted"), (plain.with_suffix(".pub"), "public"), (keydir / "junk", "not_a_key")]
    dsa = keydir / "dsa"
    if subprocess.run(["ssh-keygen", "-q", "-t", "dsa", "-N", "", "-f", str(dsa)], capture_output=True, check=False).returncode == 0:
        cases.append((dsa, "unsupported"))
    for path, kind in cases:
        want = messages[kind].replace("{path}", json.dumps(str(path)))
        with pytest.raises(ValueError) as exc:
            SigningKey.load(path)
        assert str(exc.value) == want, kind
        with pytest.raises(ValueError) as exc:
            Publisher(FakeClient(), signing_key=path)
        assert str(exc.value) == want, kind
    with pytest.raises(ValueError, match=r'^signing key ".*absent": .*No such file'):
        SigningKey.load(keydir / "absent")


@needs_keygen
def test_the_fingerprint_is_the_one_ssh_keygen_prints(keydir: Path) -> None:
    key, _ = keygen(keydir, "fp", "rsa", "3072")
    printed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key.with_suffix(".pub"))], capture_output=True, check=True, text=True
    ).stdout.split()[1]
    assert SigningKey.load(key).fingerprint == printed


@needs_keygen
def test_a_registry_that_requires_signatures(server_binary: Path, keydir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key, _ = keygen(keydir, "alice", "ed25519")
    key_type, b64 = key.with_suffix(".pub").read_text().split()[:2]
    (keydir / "allowed_signers").write_text(f"alice@example.com {key_type} {b64}\n")
    fingerprint = SigningKey.load(key).fingerprint
    root = keydir / "server"
    root.mkdir()
    # The server runs in root and reads ./config.yaml.
    (root / "config.yaml").write_text(
        f'signing:\n  allowed_signers: {keydir / "allowed_signers"}\n  require_signed: ["*"]\n'
    )
    srv = Server(port=free_port(), root=root)
    monkeypatch.setenv("III_URL", srv.url)
    clients = []
    try:
        srv.start()
        client = new_client(srv.url, "pytest-signing")
        clients.append(client)
        publisher = Publisher(client, signing_key=key, backoff=Backoff(initial_delay=0.05, max_delay=0.2, give_up_after=60))
        rounds: list[float] = []
        publisher.on_registered(lambda: rounds.append(time.monotonic()))
        publisher.skill("acme/signed", "# Signed\n")

        class Topic(BaseModel):
            topic: str = Field(description="What about")

        publisher.prompt("acme-signed", "A signed prompt", lambda args: "x", args=Topic)
        assert publisher.start().registered

        def check() -> None:
            skill = publisher.skill_versions("acme/signed")["versions"][0]
            assert (skill["signed_by"], skill["key"]) == ("alice@example.com", fingerprint)
            prompt = publisher.prompt_versions("acme-signed")["versions"][0]
            assert prompt["signed_by"] == "alice@example.com"
            assert prompt["definition"] == (
                '{"arguments":[{"description":"What about","name":"topic","required":true}],'
                '"description":"A signed prompt","function_id":"prompt::acme-signed"}'
            )

        check()
        # The engine comes back with empty state: registered again, signed.
        srv.stop()
        srv.start(fresh_data=True)
        wait_until(lambda: len(rounds) >= 2, timeout=60, what="registration after the restart")
        check()

        unsigned_client = new_client(srv.url, "pytest-unsigned")
        clients.append(unsigned_client)
        unsigned = Publisher(unsigned_client)
        unsigned.skill("acme/unsigned", "# Unsigned\n")
        result = unsigned.start()
        assert not result.registered
        [r] = result.rejected
        assert (r.code, r.retried) == ("UNSIGNED", False)
        assert 'namespace "*" requires a signature' in r.message
        assert r.advice.startswith("sign it with a key the registry's allowed_signers trusts")
        unsigned.close()
        publisher.close()
    finally:
        for c in clients:
            c.shutdown()
        srv.stop()
