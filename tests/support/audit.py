"""Reading the audit log a test produced: every event written so far, after the writer drained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtimes.accounts import auditlog


def fresh_log(settings: Any, tmp_path: Path) -> Path:
    """Points the audit log at a new file for one test, once the events of the tests before
    it are written to theirs (the writer lets events gather before it writes them)."""
    auditlog.flush()
    settings.NODUS_AUDIT_LOG = str(tmp_path / "audit.log")
    return tmp_path / "audit.log"


def events(path: Path) -> list[dict[str, Any]]:
    auditlog.flush()
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
