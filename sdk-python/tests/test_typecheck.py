"""The package, its tests and the example pass ``mypy --strict`` (config in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]


def test_mypy_strict() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=SDK,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    assert "Success: no issues found" in result.stdout
