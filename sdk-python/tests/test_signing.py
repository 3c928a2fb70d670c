"""Signing (docs/trust.md).

Every key type ssh-keygen makes signs what the publisher registers, and the
real ``ssh-keygen -Y verify`` accepts each signature over the exact bytes the
registry checks; key files the publisher cannot use are refused with the
words Go and Node use (conformance/vectors/signing.json); against a registry
that requires signatures, signed content is accepted with its signer, again
after the engine restarts, and unsigned content is refused ``UNSIGNED``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from iii_skills import Backoff, Publisher, canonical_prompt
from iii_skills._signing import SigningKey, agent_message, key_message

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


def test_agent_error_vectors() -> None:
    path = "/keys/it's \"mine\""
    fields = {"socket": '/run/a "b"/agent.sock', "fingerprint": "SHA256:abc", "count": 3, "reason": "why"}
    assert len(VECTORS["agent_errors"]) == 5
    for case in VECTORS["agent_errors"]:
        want = (
            case["message"]
            .replace("{path}", json.dumps(path))
            .replace("{socket}", json.dumps(fields["socket"]))
            .replace("{fingerprint}", "SHA256:abc")
            .replace("{count}", "3")
            .replace("{reason}", "why")
        )
        assert agent_message(case["kind"], path, '/run/a "b"/agent.sock', "SHA256:abc", 3, "why") == want


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


class NoArgs(BaseModel):
    pass


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
def test_key_files_it_cannot_sign_with_are_refused(keydir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without SSH_AUTH_SOCK (an agent could otherwise sign with the encrypted and public keys).
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    messages = {c["kind"]: c["message"] for c in VECTORS["key_errors"]}
    enc, _ = keygen(keydir, "enc", "ed25519", "", "-N", "correct horse")
    enc_pem, _ = keygen(keydir, "encpem", "rsa", "2048", "-N", "correct horse", "-m", "PEM")
    plain, _ = keygen(keydir, "plain", "ed25519")
    (keydir / "junk").write_text("not a key\n")
    cases = [(enc, "encrypted"), (enc_pem, "encrypted_pem"), (plain.with_suffix(".pub"), "public"), (keydir / "junk", "not_a_key")]
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


AGENT_FOUND = shutil.which("ssh-agent") is not None and shutil.which("ssh-add") is not None
needs_agent = pytest.mark.skipif(
    KEYGEN is None or not AGENT_FOUND, reason="not run: ssh-agent not found (Debian package openssh-client)"
)
PASSPHRASE = "correct horse"


class Agent:
    """A real ssh-agent on a socket of its own, and ssh-add run against it with a passphrase."""

    def __init__(self, d: Path, name: str) -> None:
        self.socket = str(d / f"{name}.sock")
        self.proc = subprocess.Popen(["ssh-agent", "-D", "-a", self.socket], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.askpass = d / "askpass"
        self.askpass.write_text(f'#!/bin/sh\necho "{PASSPHRASE}"\n')
        self.askpass.chmod(0o700)
        # The socket file exists from bind, before listen: wait until ssh-add
        # reaches the agent (exit 1: no identities; 2: cannot connect).
        wait_until(self._listens, 10, "ssh-agent answering")

    def _listens(self) -> bool:
        env = {**os.environ, "SSH_AUTH_SOCK": self.socket}
        return subprocess.run(["ssh-add", "-l"], env=env, capture_output=True, check=False).returncode in (0, 1)

    def add(self, *args: str) -> None:
        env = {**os.environ, "SSH_AUTH_SOCK": self.socket, "SSH_ASKPASS": str(self.askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}
        subprocess.run(["ssh-add", *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def agent(keydir: Path) -> Iterator[Agent]:
    a = Agent(keydir, "agent")
    try:
        yield a
    finally:
        a.stop()


def fingerprint_of(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], capture_output=True, check=True, text=True)
    return out.stdout.split()[1]


def agent_error(kind: str, path: Path, socket: str, **fields: str) -> str:
    message: str = next(c["message"] for c in VECTORS["agent_errors"] if c["kind"] == kind)
    message = message.replace("{path}", json.dumps(str(path))).replace("{socket}", json.dumps(socket))
    for k, v in fields.items():
        message = message.replace("{" + k + "}", v)
    return message


@needs_agent
@pytest.mark.parametrize(("name", "kind", "bits"), [("ed25519", "ed25519", ""), ("ecdsa384", "ecdsa", "384"), ("rsa", "rsa", "2048")])
@pytest.mark.parametrize("form", ["encrypted", "pub"])
def test_signatures_through_the_agent_verify_with_ssh_keygen(
    keydir: Path, agent: Agent, monkeypatch: pytest.MonkeyPatch, name: str, kind: str, bits: str, form: str
) -> None:
    key, line = keygen(keydir, name, kind, bits, "-N", PASSPHRASE)
    agent.add(str(key))
    monkeypatch.setenv("SSH_AUTH_SOCK", agent.socket)
    client = FakeClient()
    publisher = Publisher(
        client, signing_key=key if form == "encrypted" else key.with_suffix(".pub"), backoff=Backoff(initial_delay=0.01, give_up_after=5)
    )
    body = "# Through the agent\n\nü and no trailing newline"
    publisher.skill("acme/agent", body)

    def render(args: NoArgs) -> str:
        return "x"

    prompt = publisher.prompt("acme-agent", "Signed by the agent", render)
    assert publisher.start().registered
    principal = f"{name}@example.com"
    signature = sent(client, "skills::register")["signature"]
    assert keygen_verifies(keydir, line, principal, signature, body)
    assert not keygen_verifies(keydir, line, principal, signature, body + "\n")
    if kind == "rsa":
        assert b"rsa-sha2-512" in base64.b64decode("".join(signature.splitlines()[1:-1]))
    canonical = canonical_prompt("Signed by the agent", prompt.function_id, [])
    assert keygen_verifies(keydir, line, principal, sent(client, "prompts::register")["signature"], canonical)
    publisher.close()


@needs_agent
def test_an_unreachable_agent_and_a_key_it_does_not_hold_are_refused(keydir: Path, agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    key, _ = keygen(keydir, "absent", "ed25519", "", "-N", PASSPHRASE)
    gone = str(keydir / "no-agent.sock")
    for path in (key, key.with_suffix(".pub")):
        before, after = agent_error("unreachable", path, gone).split("({reason})")
        with pytest.raises(ValueError) as exc:
            SigningKey.load(path, gone)
        assert str(exc.value).startswith(before + "(") and str(exc.value).endswith(")" + after), str(exc.value)
        assert "No such file" in str(exc.value)
    want = agent_error("not_in_agent", key, agent.socket, count="0", fingerprint=fingerprint_of(key.with_suffix(".pub")))
    with pytest.raises(ValueError) as exc:
        SigningKey.load(key, agent.socket)
    assert str(exc.value) == want
    monkeypatch.setenv("SSH_AUTH_SOCK", agent.socket)
    with pytest.raises(ValueError) as exc:
        Publisher(FakeClient(), signing_key=key)
    assert str(exc.value) == want


@needs_agent
def test_a_signature_the_agent_will_not_make_is_refused(keydir: Path, agent: Agent) -> None:
    key, _ = keygen(keydir, "locked", "ecdsa", "256", "-N", PASSPHRASE)
    agent.add(str(key))
    pub = key.with_suffix(".pub")
    signer = SigningKey.load(pub, agent.socket)
    agent.add("-x")  # lock: the agent now refuses to sign
    with pytest.raises(ValueError) as exc:
        signer.sign("x")
    assert str(exc.value) == agent_error("refused", pub, agent.socket, fingerprint=fingerprint_of(pub))


FAKE_AGENT = """
import os, socket, struct, sys
path, mode, blob = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
s = lambda b: struct.pack(">I", len(b)) + b
msg = lambda b: struct.pack(">I", len(b)) + b
srv = socket.socket(socket.AF_UNIX)
srv.bind(path + ".tmp")
srv.listen()
os.rename(path + ".tmp", path)  # the socket appears listening
while True:
    c, _ = srv.accept()
    req = c.recv(65536)
    if req[4] == 11:
        c.sendall(msg(bytes([12]) + struct.pack(">I", 1) + s(blob) + s(b"k")))
    elif mode == "huge":
        c.sendall(struct.pack(">I", 256 * 1024 + 1))
    elif mode == "type":
        c.sendall(msg(bytes([99])))
    elif mode == "short":
        c.sendall(struct.pack(">I", 100) + bytes([14]))
    else:
        c.sendall(msg(bytes([14]) + s(s(b"ssh-ed25519") + s(bytes([7]) * 64))))
    c.close()
"""


@needs_keygen
@pytest.mark.parametrize(
    ("mode", "kind", "reason"),
    [
        ("huge", "bad_answer", "a message of 262145 bytes, larger than the 262144 allowed"),
        ("type", "bad_answer", "message type 99, expected 14"),
        ("short", "bad_answer", "the connection closed before a whole answer"),
        ("badsig", "bad_signature", ""),
    ],
)
def test_an_agent_that_answers_badly_or_signs_wrongly_is_refused(keydir: Path, mode: str, kind: str, reason: str) -> None:
    key, _ = keygen(keydir, "fake", "ed25519")
    pub = key.with_suffix(".pub")
    blob = base64.b64decode(pub.read_text().split()[1])
    sock = str(keydir / f"fake-{mode}.sock")
    proc = subprocess.Popen([sys.executable, "-c", FAKE_AGENT, sock, mode, blob.hex()])
    try:
        wait_until(lambda: os.path.exists(sock), 10)
        signer = SigningKey.load(pub, sock)
        with pytest.raises(ValueError) as exc:
            signer.sign("x")
        want = agent_error(kind, pub, sock, fingerprint=fingerprint_of(pub))
        if reason:
            assert str(exc.value).startswith(want.split("{reason}")[0] + reason), str(exc.value)
        else:
            assert str(exc.value) == want
    finally:
        proc.kill()
        proc.wait()
