"""Fixtures that run the real registry: ``bin/skills --standalone`` (built with ``make build``).

The server is started by the tests themselves; nothing has to be running. If it
cannot be built or does not come up, the tests that need it fail with the
build output or the server log: they never skip.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from iii import InitOptions
from iii.iii import III
from iii_helpers.observability import OtelConfig, ReconnectionConfig

REPO = Path(__file__).resolve().parents[2]
SERVER_BIN = REPO / "bin" / "skills"
READY_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def new_client(url: str, name: str = "pytest") -> III:
    """An official client that reconnects quickly (tests restart servers).

    Telemetry is off for these in-process clients: the official client keeps
    one process-wide telemetry socket on the event loop of the first client,
    which the tests shut down while others live on. The driver and example
    subprocesses (one client each, as in production) keep it on and open
    ``/otel`` on the server from ``III_URL``.
    """
    return III(
        url,
        InitOptions(
            worker_name=f"{name}-{uuid.uuid4().hex[:8]}",
            reconnection_config=ReconnectionConfig(initial_delay_ms=50, max_delay_ms=300),
            otel=OtelConfig(enabled=False),
        ),
    )


def wait_until(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    """Poll ``check`` until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # keep polling through transient errors
            last = exc
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last!r})" if last else ""))


class Program:
    """A Python program run as a user runs it (its own process, III_URL set),
    its output collected line by line; stop() sends Ctrl-C, close() kills
    what is left."""

    def __init__(self, script: Path, url: str, cwd: Path) -> None:
        self.output: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self.process = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=cwd,
            env=dict(os.environ, III_URL=url),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self._lines.put(line)

    def wait_for_line(self, prefix: str, what: str, timeout: float = 30) -> None:
        """Waits for an output line starting with prefix (each line waited at most timeout)."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"{what}:\n" + "".join(self.output)) from None
            if line.startswith(prefix):
                return

    def stop(self, timeout: float) -> None:
        """Ctrl-C; the program must exit 0 within timeout."""
        self.process.send_signal(signal.SIGINT)
        assert self.process.wait(timeout=timeout) == 0, "".join(self.output)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def call(client: III, function_id: str, payload: Any, timeout_ms: int = 5000) -> Any:
    return client.trigger({"function_id": function_id, "payload": payload, "timeout_ms": timeout_ms})


@dataclass
class Server:
    """One ``skills --standalone`` process on a fixed port, restartable."""

    port: int
    root: Path
    process: subprocess.Popen[bytes] | None = None
    generation: int = 0
    logs: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self, fresh_data: bool = False) -> None:
        if fresh_data or self.generation == 0:
            self.generation += 1
        data = self.root / f"data-{self.generation}"
        data.mkdir(exist_ok=True)
        log = self.root / f"server-{len(self.logs) + 1}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(SERVER_BIN), "--standalone", "--url", self.url, "--data", str(data), "--mcp-addr", ""],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.wait_ready()

    def wait_ready(self) -> None:
        client = new_client(self.url, "pytest-ready")
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            last: BaseException | None = None
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(
                        f"bin/skills exited with {self.process.returncode}:\n{self.log_text()}"
                    )
                try:
                    call(client, "skills::list", {}, timeout_ms=1000)
                    return
                except Exception as exc:
                    last = exc
                    time.sleep(0.1)
            raise RuntimeError(
                f"skills::list did not answer within {READY_TIMEOUT:.0f} s on {self.url} "
                f"(last error: {last!r}); server log:\n{self.log_text()}"
            )
        finally:
            client.shutdown()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def log_text(self) -> str:
        return "\n".join(p.read_text("utf-8", "replace") for p in self.logs if p.exists())


@pytest.fixture(scope="session")
def server_binary() -> Path:
    """``make build`` once per session; a failed build fails every test that needs it."""
    make = shutil.which("make")
    if make is None:
        raise RuntimeError("`make` is not installed; it is needed to build bin/skills")
    result = subprocess.run(
        [make, "build"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
    )
    if result.returncode != 0 or not SERVER_BIN.is_file():
        raise RuntimeError(
            f"`make build` failed ({result.returncode}):\n{result.stdout.decode('utf-8', 'replace')}"
        )
    return SERVER_BIN


@pytest.fixture(scope="session")
def server(server_binary: Path) -> Iterator[Server]:
    """The shared registry; III_URL points at it (the client's /otel socket reads it)."""
    root = Path(tempfile.mkdtemp(prefix="iii-skills-pytest-"))
    srv = Server(port=free_port(), root=root)
    previous = os.environ.get("III_URL")
    os.environ["III_URL"] = srv.url
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        if previous is None:
            os.environ.pop("III_URL", None)
        else:
            os.environ["III_URL"] = previous
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def own_server(server_binary: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A registry of the test's own, for tests that stop and restart it."""
    root = Path(tempfile.mkdtemp(prefix="iii-skills-pytest-own-"))
    srv = Server(port=free_port(), root=root)
    monkeypatch.setenv("III_URL", srv.url)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def iii(server: Server) -> Iterator[III]:
    """A fresh official client for the publisher under test."""
    client = new_client(server.url, "pytest-publisher")
    try:
        yield client
    finally:
        client.shutdown()


@pytest.fixture(scope="session")
def observer(server: Server) -> Iterator[III]:
    """A separate client that looks at the registry the way an MCP bridge would."""
    client = new_client(server.url, "pytest-observer")
    try:
        yield client
    finally:
        client.shutdown()


@pytest.fixture
def uid() -> str:
    """A suffix that keeps ids of different tests apart on the shared server."""
    return uuid.uuid4().hex[:10]
