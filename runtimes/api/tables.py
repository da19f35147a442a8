"""Server-side printing: meta.k8s.io Tables for kubectl's human-readable output.

A list's rows and PartialObjectMetadata items are encoded once per object revision, as kube's
cacher keeps each object's serialisations (cachingObject): the pieces are kept on the watch
cache's entry, which a new revision replaces, and a later list writes them out as they are.
Only the Age cell is made at each answer; a kind whose cells depend on the time printed
(core Events' Last Seen) reuses only its metadata.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from runtimes.api import metrics
from runtimes.apimachinery.durations import human_age
from runtimes.apimachinery.meta import Obj
from runtimes.registry.resources import ResourceType
from runtimes.storage import store
from runtimes.watch.cache import Entry

# An item to print: a cache entry (its encodings kept), stored JSON text, or an object.
Item = Entry | str | Obj

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


def columns(rt: ResourceType) -> list[Obj]:
    defined = [
        {
            "name": name,
            "type": type_,
            "format": "name" if name == "Name" else "",
            "description": description,
            "priority": priority,
        }
        for name, type_, description, priority, _cell in rt.columns
    ]
    if not rt.name_and_age_columns:
        return defined
    return [NAME_COLUMN, *defined, AGE_COLUMN]


def partial_metadata(obj: Obj, version: str) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": obj.get("metadata", {}),
    }


def _cells(rt: ResourceType, obj: Obj) -> list[Any]:
    """The row's cells but Age, which is made when printed."""
    cells = [cell(obj) for _n, _t, _d, _p, cell in rt.columns]
    return [obj["metadata"].get("name", ""), *cells] if rt.name_and_age_columns else cells


def row(rt: ResourceType, obj: Obj, version: str, include: str = "Metadata") -> Obj:
    cells = _cells(rt, obj)
    if rt.name_and_age_columns:
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


def encoded_table(
    rt: ResourceType, items: Iterable[Item], version: str, list_meta: Obj, include: str
) -> bytes:
    """`table` as JSON, each row from its entry's kept encodings where there are some."""
    made = _Made(rt)
    rows = [orjson.Fragment(_encoded_row(rt, item, version, include, made)) for item in items]
    made.report()
    return orjson.dumps(
        {
            "kind": "Table",
            "apiVersion": f"meta.k8s.io/{version}",
            "metadata": list_meta,
            "columnDefinitions": columns(rt),
            "rows": rows,
        }
    )


def encoded_partials(rt: ResourceType, items: Iterable[Item], version: str) -> list[bytes]:
    """`partial_metadata` of each item as JSON, kept on its entry for its revision."""
    made = _Made(rt)
    encoded = [_encoded_partial(item, version, made) for item in items]
    made.report()
    return encoded


class _Made:
    """How many encodings one answer made and how many it reused, for the metrics."""

    def __init__(self, rt: ResourceType) -> None:
        self.resource = rt.plural
        self.counts: Counter[tuple[str, bool]] = Counter()  # (form, reused)

    def report(self) -> None:
        for form in ("row", "metadata"):
            metrics.printed(
                self.resource, form, self.counts[(form, False)], self.counts[(form, True)]
            )


def _encoded_partial(item: Item, version: str, made: _Made) -> bytes:
    memo = item.memo if isinstance(item, Entry) else None
    key = ("metadata", version)
    found: bytes | None = memo.get(key) if memo is not None else None
    made.counts[("metadata", found is not None)] += 1
    if found is None:
        found = orjson.dumps(partial_metadata(_parsed(item), version))
        if memo is not None:
            memo[key] = found
    return found


def _encoded_row(rt: ResourceType, item: Item, version: str, include: str, made: _Made) -> bytes:
    """`row` as JSON: the cells but Age, and the row's metadata, kept on a cache entry."""
    memo = item.memo if isinstance(item, Entry) and not rt.dated_cells else None
    kept = memo.get("row") if memo is not None else None
    made.counts[("row", kept is not None)] += 1
    if kept is None:
        obj = _parsed(item)
        kept = (orjson.dumps(_cells(rt, obj)), obj["metadata"].get("creationTimestamp"))
        if memo is not None:
            memo["row"] = kept
    cells, created = kept
    if rt.name_and_age_columns:  # the Age cell goes last, made now
        cells = cells[:-1] + b"," + orjson.dumps(human_age(created)) + b"]"
    if include == "Object":
        obj_json = _text(item)
    elif include == "Metadata":
        obj_json = _encoded_partial(item, version, made)
    else:
        obj_json = b"null"
    return b'{"cells":' + cells + b',"object":' + obj_json + b"}"


def _parsed(item: Item) -> Obj:
    if isinstance(item, Entry):
        return item.parsed()
    return store.loads(item) if isinstance(item, str) else item


def _text(item: Item) -> bytes:
    if isinstance(item, Entry):
        return item.raw.encode()
    if isinstance(item, str):
        return item.encode()
    return orjson.dumps(item)
