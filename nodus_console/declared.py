"""Every setting read from the environment, declared once: its name, type, default and doc.

`settings.py` assigns each one with `declare(...)`, which records the declaration and returns
the value the environment gives (or the default). Code reads `settings.NAME`; docs/configuration
.md's table is generated from `DECLARED` (`manage.py configdoc --write`), and
tests/project/test_settings_declared.py fails on a setting read that was never declared.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TRUE = {"1", "true", "yes", "on"}


def flag(text: str) -> bool:
    return text.lower() in TRUE


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str
    shown: str  # the default as the docs show it

    @property
    def type_name(self) -> str:
        return {flag: "bool", int: "int", float: "float", str: "string"}.get(self.parse, "list")


DECLARED: dict[str, Setting] = {}


def declare[T](name: str, parse: Callable[[str], T], default: T, doc: str, shown: str = "") -> T:
    """The setting `name` from the environment (parsed), else `default`; recorded once."""
    if name in DECLARED:
        raise ValueError(f"{name} is declared twice")
    text = shown or ("" if default is None else _shown(default))
    DECLARED[name] = Setting(name, parse, default, doc, text)
    raw = os.environ.get(name)
    return default if raw is None else parse(raw)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)


def markdown_table() -> str:
    """The configuration table of docs/configuration.md, in declaration order."""
    rows = ["| Variable | Type | Default | What it does |", "|---|---|---|---|"]
    for setting in DECLARED.values():
        default = f"`{setting.shown}`" if setting.shown else "*(none)*"
        doc = setting.doc.replace("|", "\\|")
        rows.append(f"| `{setting.name}` | {setting.type_name} | {default} | {doc} |")
    return "\n".join(rows) + "\n"
