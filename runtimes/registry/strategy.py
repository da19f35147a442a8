"""Strategies: what is kind-specific about a write, so the store can stay generic.

Mirrors kube-apiserver's ``RESTCreateStrategy``/``RESTUpdateStrategy``: the main endpoint keeps
the old status, the status strategy keeps the old spec and metadata. Kinds subclass
`Strategy` to add defaulting, validation (collecting every `FieldError`) and warnings.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from runtimes.apimachinery import schema_nodes
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.metadata_rules import finalizer_warnings
from runtimes.apimachinery.schema_nodes import Field


class Strategy:
    """The main endpoint: spec and metadata change, status never does."""

    subresource = ""
    # The kind's structural schema, when it has one: fieldValidation's unknown fields by it.
    root_schema: Field | None = None

    def prepare_for_create(self, obj: Obj) -> None:
        obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)

    def default(self, obj: Obj) -> None:
        """Fills defaults in place; must be idempotent."""

    def derive(self, obj: Obj) -> None:
        """Sets server-derived fields (e.g. status.managed) after every write's other steps."""

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        return []

    def warnings(self, obj: Obj, old: Obj | None) -> list[str]:
        return []

    def unknown_fields(self, obj: Obj) -> list[str]:
        """Paths (spec.foo) that the kind's schema does not know, for fieldValidation."""
        if self.root_schema is None:
            return []
        return schema_nodes.unknown_fields(obj, self.root_schema, "")

    def prune_unknown(self, obj: Obj) -> None:
        """Drops what `unknown_fields` reports (fieldValidation=Ignore or Warn)."""
        if self.root_schema is not None:
            schema_nodes.prune_unknown(obj, self.root_schema)

    def normalize(self, obj: Obj) -> None:
        """Makes a decoded body what kube would store, in place, before any other step: a
        whole float in an integer field becomes the integer (kube's type check takes 2.0 for
        one, and Go writes it as 2)."""
        if self.root_schema is not None:
            schema_nodes.whole_floats_as_integers(obj, self.root_schema)


class StatusStrategy(Strategy):
    """The /status subresource: only status changes; the rest is taken from the old object."""

    subresource = "status"

    def __init__(self, main: Strategy) -> None:
        self.main = main

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        status = new.get("status")
        managed_fields = new.get("metadata", {}).get("managedFields")
        new.clear()
        new.update(copy.deepcopy(old))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status
        if managed_fields is not None:
            new["metadata"]["managedFields"] = managed_fields

    # The body is decoded as the kind's whole object, as at the main endpoint (kube's status
    # scope shares its serializer): unknown fields anywhere count, status's included.
    def unknown_fields(self, obj: Obj) -> list[str]:
        return self.main.unknown_fields(obj)

    def prune_unknown(self, obj: Obj) -> None:
        self.main.prune_unknown(obj)

    def normalize(self, obj: Obj) -> None:
        self.main.normalize(obj)

    def derive(self, obj: Obj) -> None:
        self.main.derive(obj)

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        return self.validate_status(obj)

    def validate_status(self, obj: Obj) -> list[FieldError]:
        return []


def custom_resource_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """What kube warns about on any custom resource's create or update through its main
    endpoint (never /status): finalizers the write adds without a domain-qualified name."""
    finalizers = (obj.get("metadata") or {}).get("finalizers")
    before = ((old or {}).get("metadata") or {}).get("finalizers")
    return finalizer_warnings(finalizers, before)


def cell(path: str) -> Callable[[Obj], Any]:
    """A Table column's reader: the value at a dotted path (``spec.task``), None where absent."""
    keys = path.split(".")

    def read(obj: Obj) -> Any:
        value: Any = obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    return read
