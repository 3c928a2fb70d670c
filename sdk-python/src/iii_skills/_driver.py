"""Conformance driver (conformance/DRIVER.md): ``python -m iii_skills._driver``.

Reads one JSON command per line on stdin, answers one JSON object per line on
stdout, and reports publisher events (``log``, ``registered``, ``gave_up``,
``skill_change``, ``prompt_change``) on stdout as they happen. Everything
else (the official client's own logging) goes to stderr. The engine address
comes from ``III_URL``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from iii import InitOptions
from iii.iii import III

from . import __version__
from ._engine_url import engine_url
from ._fixtures import add_function, add_prompt
from ._registrar import Backoff, RegistrationResult
from ._signing import SigningKey
from .publisher import PromptChange, Publisher, SkillChange
from .validation import ValidationError
_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warn",
    logging.ERROR: "error",
    logging.CRITICAL: "error",
}


class CommandError(Exception):
    """A command the driver refuses (bad arguments, wrong order)."""


class _EventLogHandler(logging.Handler):
    def __init__(self, driver: Driver) -> None:
        super().__init__(level=logging.DEBUG)
        self._driver = driver

    def emit(self, record: logging.LogRecord) -> None:
        level = _LEVELS.get(record.levelno)
        if level is None:
            level = "error" if record.levelno > logging.ERROR else "debug"
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        self._driver.emit({"event": "log", "level": level, "message": message})


class Driver:
    """One driver session: a client, a publisher and the command loop."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._out_lock = threading.Lock()
        self._backoff = Backoff()
        self._signing_key: str | None = None
        self._client: III | None = None
        self._publisher: Publisher | None = None
        self._started = False
        self._current_id: Any = None
        self._workers: list[threading.Thread] = []
        self._logger = logging.getLogger("iii_skills")
        self._log_handler = _EventLogHandler(self)

    # ---------------------------------------------------------------- output

    def emit(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False)
        with self._out_lock:
            self._stdout.write(line + "\n")
            self._stdout.flush()

    def _reply(self, command_id: Any, result: Any) -> None:
        self.emit({"id": command_id, "ok": True, "result": result})

    def _fail(self, command_id: Any, error: str) -> None:
        self.emit({"id": command_id, "ok": False, "error": error})

    # ---------------------------------------------------------------- session

    def publisher(self) -> Publisher:
        """The session's publisher, made by the first command that needs it: a
        malformed III_URL fails that command (engine_url raises at once)."""
        if self._publisher is None:
            url = engine_url()
            self._client = III(url, InitOptions(worker_name=f"iii-skills-driver:{os.getpid()}"))
            publisher = Publisher(
                self._client,
                backoff=self._backoff,
                internal_namespace=f"iii-skills::driver-{os.getpid()}",
                signing_key=self._signing_key,
            )
            publisher.on_registered(lambda: self.emit({"event": "registered"}))
            publisher.on_gave_up(lambda: self.emit({"event": "gave_up"}))
            self._publisher = publisher
        return self._publisher

    def run(self) -> int:
        self._logger.addHandler(self._log_handler)
        self._logger.setLevel(logging.DEBUG)
        try:
            for line in self._stdin:
                if not line.strip():
                    continue
                if self._handle(line):
                    return 0
            self._shutdown(unregister=False)
            return 0
        finally:
            self._logger.removeHandler(self._log_handler)

    def _handle(self, line: str) -> bool:
        """Run one command; True when the driver should exit."""
        try:
            command_id, command = decode_command(line)
        except CommandError as exc:
            self._fail(None, str(exc))
            return False
        if "cmd" not in command:
            self._fail(command_id, 'bad command line: missing "cmd" (the command name, a string)')
            return False
        name = command["cmd"]
        if not isinstance(name, str):
            self._fail(command_id, f'bad command line: "cmd" must be a string, got {json.dumps(name)}')
            return False
        handler = self._commands().get(name)
        if handler is None:
            self._fail(command_id, f"unknown command: {json.dumps(name)}")
            return False
        try:
            self._current_id = command_id
            result = handler(command)
        except _Exit:
            self._reply(command_id, None)
            return True
        except _Deferred:
            return False
        except (CommandError, ValidationError, ValueError, TypeError, RuntimeError) as exc:
            self._fail(command_id, str(exc))
            return False
        except Exception as exc:  # never exit on a bad command
            self._fail(command_id, f"{type(exc).__name__}: {exc}")
            return False
        self._reply(command_id, result)
        return False

    def _commands(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "hello": self._hello,
            "configure": self._configure,
            "skill": self._skill,
            "section": self._section,
            "prompt": self._prompt,
            "function": self._function,
            "subscribe": self._subscribe,
            "start": self._start,
            "close": self._close,
        }

    # ---------------------------------------------------------------- commands

    def _hello(self, command: dict[str, Any]) -> Any:
        return {"sdk": "python", "version": __version__}

    def _configure(self, command: dict[str, Any]) -> Any:
        if self._started:
            raise CommandError("configure must come before start")
        if command.get("signing_key") is not None:
            if self._publisher is not None:
                raise CommandError("configure: signing_key must come before every other command")
            path = _str(command, "signing_key")
            SigningKey.load(path)  # the SDK's error, at once
            self._signing_key = path
        backoff = command.get("backoff") or {}
        if not isinstance(backoff, dict):
            raise CommandError("backoff must be an object")
        fields = {
            "initial_ms": "initial_delay",
            "multiplier": "multiplier",
            "max_ms": "max_delay",
            "give_up_ms": "give_up_after",
        }
        current = {
            "initial_delay": self._backoff.initial_delay,
            "multiplier": self._backoff.multiplier,
            "max_delay": self._backoff.max_delay,
            "give_up_after": self._backoff.give_up_after,
        }
        for key, value in backoff.items():
            if key not in fields:
                raise CommandError(f"unknown backoff setting: {key}")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise CommandError(f"backoff.{key} must be a number")
            attr = fields[key]
            current[attr] = float(value) if key == "multiplier" else float(value) / 1000.0
        self._backoff = Backoff(**current)
        if self._publisher is not None:
            self._publisher.backoff = self._backoff
        return None

    def _skill(self, command: dict[str, Any]) -> Any:
        self.publisher().skill(
            _str(command, "skill_id"), _str(command, "markdown"), signature=_optional_str(command, "signature")
        )
        return None

    def _section(self, command: dict[str, Any]) -> Any:
        if "output" not in command:
            raise CommandError('section: missing argument "output" (any JSON)')
        output = command["output"]
        section = self.publisher().section(_str(command, "path"), lambda: output)
        return {"uri": section.uri}

    def _prompt(self, command: dict[str, Any]) -> Any:
        name = command.get("name")
        if name is not None and not isinstance(name, str):
            raise CommandError(f'prompt: argument "name" must be a string, got {json.dumps(name)}')
        prompt = add_prompt(self.publisher(), _str(command, "fixture"), name, _optional_str(command, "signature"))
        return {"function_id": prompt.function_id}

    def _function(self, command: dict[str, Any]) -> Any:
        add_function(self.publisher(), _str(command, "fixture"), _str(command, "function_id"))
        return None

    def _subscribe(self, command: dict[str, Any]) -> Any:
        kind = command.get("kind")
        publisher = self.publisher()
        if kind == "skills":

            def on_skill(event: SkillChange) -> None:
                self.emit({"event": "skill_change", "op": event.op, "id": event.id})

            publisher.on_skill_change(on_skill)
        elif kind == "prompts":

            def on_prompt(event: PromptChange) -> None:
                self.emit({"event": "prompt_change", "op": event.op, "name": event.name})

            publisher.on_prompt_change(on_prompt)
        else:
            raise CommandError(f'kind must be "skills" or "prompts", got {json.dumps(kind)}')
        return None

    def _start(self, command: dict[str, Any]) -> Any:
        wait = _bool(command, "wait", True)
        publisher = self.publisher()
        self._started = True
        if not wait:
            publisher.start_in_background()
            return None
        command_id = self._current_id

        def run() -> None:
            try:
                result = publisher.start()
            except Exception as exc:
                self._fail(command_id, f"{type(exc).__name__}: {exc}")
                return
            self._reply(command_id, verdict(result))

        worker = threading.Thread(target=run, name="driver-start", daemon=True)
        self._workers.append(worker)
        worker.start()
        raise _Deferred

    def _close(self, command: dict[str, Any]) -> Any:
        unregister = _bool(command, "unregister", False)
        self._shutdown(unregister=unregister)
        raise _Exit

    def _shutdown(self, unregister: bool) -> None:
        if self._publisher is not None:
            self._publisher.close(unregister=unregister)
        for worker in self._workers:
            worker.join(timeout=10)
        client = self._client
        if client is not None:
            stopper = threading.Thread(target=client.shutdown, name="driver-shutdown", daemon=True)
            stopper.start()
            stopper.join(timeout=5)


class _Exit(Exception):
    """The command was ``close``: reply, then exit."""


class _Deferred(Exception):
    """The reply is sent later, from another thread."""


def verdict(result: RegistrationResult) -> dict[str, Any]:
    """The start reply (DRIVER.md): registered, and every refusal with its code, holder and advice."""
    return {
        "registered": result.registered,
        "rejected": [
            {
                "kind": r.kind,
                "name": r.name,
                "code": r.code,
                "message": r.message,
                "holder": None
                if r.holder is None
                else {"worker_id": r.holder.worker_id, "worker_name": r.holder.worker_name},
                "advice": r.advice,
                "retried": r.retried,
            }
            for r in result.rejected
        ],
    }


def decode_command(line: str) -> tuple[Any, dict[str, Any]]:
    """Split one command line into its frame id and its arguments (with ``cmd``).

    Plain JSON decoding: ``id`` is the frame id, every other key is an
    argument (the skill and function ids are ``skill_id`` and
    ``function_id``, never ``id``).

    Raises:
        CommandError: the line is not a JSON object.
    """
    try:
        decoded = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CommandError(f"bad command line: {exc}") from None
    if not isinstance(decoded, dict):
        raise CommandError("bad command line: a command must be a JSON object")
    frame_id = decoded.pop("id", None)
    return frame_id, decoded


def _str(command: dict[str, Any], key: str) -> str:
    if key not in command:
        raise CommandError(f'{command["cmd"]}: missing argument "{key}" (a string)')
    value = command[key]
    if not isinstance(value, str):
        raise CommandError(
            f'{command["cmd"]}: argument "{key}" must be a string, got {json.dumps(value)}'
        )
    return value


def _optional_str(command: dict[str, Any], key: str) -> str | None:
    return None if command.get(key) is None else _str(command, key)


def _bool(command: dict[str, Any], key: str, default: bool) -> bool:
    value = command.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CommandError(
            f'{command["cmd"]}: argument "{key}" must be a boolean, got {json.dumps(value)}'
        )
    return value


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    code = Driver(sys.stdin, sys.stdout).run()
    sys.stdout.flush()
    sys.stderr.flush()
    # The official client keeps a non-daemon loop thread; it was shut down
    # above, so leave without waiting for stragglers.
    os._exit(code)


if __name__ == "__main__":
    main()
