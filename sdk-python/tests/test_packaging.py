"""The package's own dependencies reach every environment that runs it.

``make venv`` installs the pinned ``requirements-dev.txt`` and then the
package with ``--no-deps``; a dependency added to ``pyproject.toml`` without
its pin (``cryptography`` for signing, say) would be missing on a fresh
machine. Each dependency of the package, and of the ones it pulls in that
the pins must cover, is pinned there.
"""

from __future__ import annotations

import platform
import re
from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def test_every_dependency_of_the_package_is_pinned_for_the_dev_venv() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.S | re.M)
    assert block, "pyproject.toml has no dependencies list"
    declared = {_name(d) for d in re.findall(r'"([^"]+)"', block.group(1))}
    assert "cryptography" in declared
    pinned = {
        _name(line)
        for line in (ROOT / "requirements-dev.txt").read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert declared <= pinned, f"not pinned in requirements-dev.txt: {sorted(declared - pinned)}"
    # What cryptography itself needs on this interpreter (cffi on CPython) is pinned too.
    needs = set()
    for text in requires("cryptography") or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            needs.add(_name(req.name))
    assert "cffi" in needs or platform.python_implementation() == "PyPy"
    assert needs <= pinned, f"cryptography needs {sorted(needs - pinned)}, not pinned in requirements-dev.txt"
