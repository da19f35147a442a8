"""Server-side printing: meta.k8s.io Tables for kubectl's human-readable output."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from runtimes.apimachinery.meta import Obj
from runtimes.registry.resources import ResourceType

NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
AGE_COLUMN = {
    "name": "Age",
    "type": "date",
    "format": "",
    "description": "CreationTimestamp is the time the object was created.",
    "priority": 0,
}


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """kube's HumanDuration: 45s, 5m, 3h, 2d, 1y."""
    if not timestamp:
        return "<unknown>"
    try:
        if len(timestamp) == 20 and timestamp[10] == "T" and timestamp[19] == "Z":
            # The one shape we write, parsed 50x faster than by strptime (Table lists of
            # thousands of objects parse one per row).
            then = datetime.fromisoformat(timestamp[:19]).replace(tzinfo=UTC)
        else:
            then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


def columns(rt: ResourceType) -> list[Obj]:
    defined = [
        {
            "name": name,
            "type": type_,
            "format": "",
            "description": description,
            "priority": priority,
        }
        for name, type_, description, priority, _cell in rt.columns
    ]
    return [NAME_COLUMN, *defined, AGE_COLUMN]


def partial_metadata(obj: Obj, version: str) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": obj.get("metadata", {}),
    }


def row(rt: ResourceType, obj: Obj, version: str, include: str = "Metadata") -> Obj:
    cells = [obj["metadata"].get("name", "")]
    cells += [cell(obj) for _n, _t, _d, _p, cell in rt.columns]
    cells.append(human_age(obj["metadata"].get("creationTimestamp")))
    result: Obj = {"cells": cells}
    if include == "Object":
        result["object"] = obj
    elif include == "Metadata":
        result["object"] = partial_metadata(obj, version)
    else:  # None: kube's TableRow still writes the key (a RawExtension is never omitted)
        result["object"] = None
    return result


def table(
    rt: ResourceType,
    objects: Iterable[Obj],
    version: str,
    list_meta: Obj,
    include: str = "Metadata",
    with_columns: bool = True,
) -> Obj:
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": list_meta,
        "columnDefinitions": columns(rt) if with_columns else None,
        "rows": [row(rt, obj, version, include) for obj in objects],
    }
