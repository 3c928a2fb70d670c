"""The ssh-agent client of the publisher (the agent protocol, draft-miller-ssh-agent).

It lists the agent's keys and asks it to sign: one message each way on a
fresh unix-socket connection, every read bounded in size and time.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Literal

SSH_AGENT_FAILURE = 5
SSH2_AGENTC_REQUEST_IDENTITIES = 11
SSH2_AGENT_IDENTITIES_ANSWER = 12
SSH2_AGENTC_SIGN_REQUEST = 13
SSH2_AGENT_SIGN_RESPONSE = 14
SSH_AGENT_RSA_SHA2_512 = 4

#: The largest answer read from an agent (a list of keys, a signature).
MAX_AGENT_MESSAGE = 256 * 1024
#: How long one exchange with the agent may take, connecting included.
AGENT_TIMEOUT = 10.0


class AgentError(Exception):
    """An exchange failed: the agent could not be reached, refused, or gave no valid answer."""

    def __init__(self, kind: Literal["unreachable", "refused", "bad_answer"], reason: str = "") -> None:
        super().__init__(reason or kind)
        self.kind: Literal["unreachable", "refused", "bad_answer"] = kind
        self.reason = reason


def exchange(path: str, request: bytes, expect: int) -> bytes:
    """Send one agent message to the agent at ``path``; return the answer's contents (after its type byte)."""
    deadline = time.monotonic() + AGENT_TIMEOUT
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(AGENT_TIMEOUT)
        try:
            sock.connect(path)
        except socket.timeout:
            raise AgentError("unreachable", f"no connection within {AGENT_TIMEOUT:g} s") from None
        except OSError as exc:
            raise AgentError("unreachable", exc.strerror or str(exc)) from None
        try:
            sock.sendall(struct.pack(">I", len(request)) + request)
            (n,) = struct.unpack(">I", _read(sock, 4, deadline))
            if n > MAX_AGENT_MESSAGE:
                raise AgentError("bad_answer", f"a message of {n} bytes, larger than the {MAX_AGENT_MESSAGE} allowed")
            if n == 0:
                raise AgentError("bad_answer", "an empty message")
            answer = _read(sock, n, deadline)
        except socket.timeout:
            raise AgentError("bad_answer", f"no answer within {AGENT_TIMEOUT:g} s") from None
        except OSError as exc:
            raise AgentError("bad_answer", exc.strerror or str(exc)) from None
    finally:
        sock.close()
    if answer[0] == expect:
        return answer[1:]
    if answer[0] == SSH_AGENT_FAILURE:
        raise AgentError("refused")
    raise AgentError("bad_answer", f"message type {answer[0]}, expected {expect}")


def _read(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout
        sock.settimeout(left)
        chunk = sock.recv(min(n - got, 65536))
        if not chunk:
            raise AgentError("bad_answer", f"the connection closed before a whole answer ({got} of {n} bytes)")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
