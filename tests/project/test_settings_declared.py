"""Every setting has one home: declared once in nodus_console/settings.py (type, default, doc),
read as `settings.NAME`, and documented by the table generated from the declarations."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

from nodus_console.declared import DECLARED

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    p
    for folder in ("runtimes", "nodus_console")
    for p in (ROOT / folder).rglob("*.py")
    if "migrations" not in p.parts
]
# A default beside the name is a second home for it (pieces joined: not a match in this file).
SECOND_HOME = re.compile(r"getattr\(\s*settings,\s*\"" + "NODUS_")
ENV_READ = re.compile(
    r"(?:environ(?:\.get)?\s*[\[(]|getenv\s*\(|_ENV\s*=)\s*\"(NODUS_[A-Z0-9_]+)\""
)
# Read where they are used (serve's process environment, the catalog's pure loader).
READ_WHERE_USED = {"NODUS_ADMIN_PASSWORD", "NODUS_ACCELERATORS_FILE"}


def test_no_code_keeps_a_default_of_its_own() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in SOURCES
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if SECOND_HOME.search(line)
    ]
    assert found == [], "read settings.NAME; declare the default in settings.py"


def test_every_variable_read_is_declared() -> None:
    read = {name for p in SOURCES for name in ENV_READ.findall(p.read_text())}
    assert read, "the pattern no longer finds the reads"
    assert sorted(read - set(DECLARED)) == []


def test_every_declared_setting_is_a_setting() -> None:
    missing = [
        name
        for name in DECLARED
        if name.startswith("NODUS_") and name not in READ_WHERE_USED and not hasattr(settings, name)
    ]
    assert missing == []


def test_the_configuration_table_is_the_generated_one() -> None:
    call_command("configdoc", "--check")
