"""Reading the audit log a test produced: every event written so far, after the writer drained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtimes.accounts import auditlog


def events(path: Path) -> list[dict[str, Any]]:
    auditlog.flush()
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
