"""Validates each folder given with skills-ref (PyPI) and prints {"version", "errors": {folder: [message]}}.

`agentskills validate DIR` (the package's CLI for `skills-ref validate`) prints the list that
skills_ref.validator.validate returns for DIR and exits 1 when it is not empty; one process for
every folder keeps the comparison quick (skillsref_test.go runs the CLI too, on two folders).
"""

import json
import sys
from importlib.metadata import version
from pathlib import Path

from skills_ref.validator import validate

print(json.dumps({"version": version("skills-ref"), "errors": {d: validate(Path(d)) for d in sys.argv[1:]}}))
