"""The Accelerator kind's strategy and printer columns: read-only, one object per variant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtimes.registry.strategy import Strategy

STRATEGY = Strategy()

# The columns after Name (which the generic Table converter always puts first) and before Age,
# as `kubectl get accelerators` prints them; the registry's Accelerator kind is built from these
# and `table_row` fills them. Priority 1 shows only with `-o wide`.
ACCELERATOR_COLUMNS: list[dict[str, Any]] = [
    {
        "name": "Family",
        "type": "string",
        "format": "",
        "priority": 0,
        "description": "The accelerator family.",
    },
    {
        "name": "Memory",
        "type": "string",
        "format": "",
        "priority": 0,
        "description": "Memory per GPU.",
    },
    {
        "name": "Class",
        "type": "string",
        "format": "",
        "priority": 0,
        "description": "The accelerator class estimates are keyed by.",
    },
    {
        "name": "NVLink",
        "type": "boolean",
        "format": "",
        "priority": 0,
        "description": "Whether the variant has NVLink.",
    },
    {
        "name": "Offerings",
        "type": "integer",
        "format": "",
        "priority": 1,
        "description": "How many host shapes offer it.",
    },
]


def table_row(obj: Mapping[str, Any]) -> list[Any]:
    """The cells for ACCELERATOR_COLUMNS: Family, Memory, Class, NVLink, Offerings."""
    spec = obj.get("spec") or {}
    return [
        spec.get("family"),
        spec.get("memory"),
        spec.get("acceleratorClass"),
        spec.get("nvlink"),
        len(spec.get("offerings") or []),
    ]


def _cell(index: int) -> Any:
    return lambda obj: table_row(obj)[index]


COLUMNS = tuple(
    (c["name"], c["type"], c["description"], c["priority"], _cell(index))
    for index, c in enumerate(ACCELERATOR_COLUMNS)
)
