"""Settings of the boot-time registration retry (docs/publishers.md)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff between registration rounds, in seconds.

    The defaults are the contract's: wait 5 s after the first failed round,
    double each time, never more than 60 s, give up 180 s after the first
    attempt (logging ``skills handshake gave up; install / start it and
    restart this worker`` at warning level).
    """

    initial_delay: float = 5.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    give_up_after: float = 180.0

    def __post_init__(self) -> None:
        if self.initial_delay < 0 or self.max_delay < 0 or self.give_up_after < 0:
            raise ValueError("backoff delays must not be negative")
        if self.multiplier < 1:
            raise ValueError("backoff multiplier must be at least 1")

    def delays(self) -> "_DelayIterator":
        """The successive waits: initial, ×multiplier, capped at max_delay."""
        return _DelayIterator(self)


class _DelayIterator:
    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._next = min(backoff.initial_delay, backoff.max_delay)

    def __iter__(self) -> "_DelayIterator":
        return self

    def __next__(self) -> float:
        current = self._next
        self._next = min(current * self._backoff.multiplier, self._backoff.max_delay)
        return current
