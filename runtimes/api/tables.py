"""Server-side printing: meta.k8s.io Tables for kubectl's human-readable output."""

from __future__ import annotations

from collections.abc import Iterable

from runtimes.apimachinery.durations import human_age
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


def row(rt: ResourceType, obj: Obj, version: str, include: str = "Metadata") -> Obj:
    cells = [cell(obj) for _n, _t, _d, _p, cell in rt.columns]
    if rt.name_and_age_columns:
        cells = [
            obj["metadata"].get("name", ""),
            *cells,
            human_age(obj["metadata"].get("creationTimestamp")),
        ]
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
