"""Module docstrings say what a module is for in about ten lines; reasoning goes beside the code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 12  # "about ten"


def test_every_module_docstring_is_short() -> None:
    long = []
    for folder in ("runtimes", "nodus_console"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            doc = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
            lines = len(doc.strip("\n").splitlines())
            if lines > LIMIT:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert long == [], "move the reasoning to comments beside its code:\n" + "\n".join(long)
