"""Prints the project's requirements from pyproject.toml, one a line, for `pip install -r`.

`requirements.py` prints the runtime dependencies; `requirements.py test` adds the [test] extra.
The project is not a package, so this stands in for `pip install -e '.[test]'`.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())[
    "project"
]
lines = list(project["dependencies"])
for extra in sys.argv[1:]:
    lines += project["optional-dependencies"][extra]
print("\n".join(lines))
