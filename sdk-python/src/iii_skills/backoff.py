"""``iii_skills.backoff``, kept as an import path: :class:`Backoff` lives in
``_registrar.py`` beside the registration it configures (``registrar.go`` /
``registrar.ts`` in Go and Node)."""

from ._registrar import Backoff

__all__ = ["Backoff"]
