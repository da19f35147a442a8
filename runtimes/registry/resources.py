"""Kinds the store serves: names, scope and strategies, one descriptor each.

Discovery, OpenAPI paths, URL routing and error messages are all derived from these
descriptors, so adding a kind is one `ResourceType` and its strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.fieldsets import ListTypes
from runtimes.apimachinery.schema_nodes import Field
from runtimes.registry.strategy import StatusStrategy, Strategy


@dataclass(frozen=True, eq=False)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    strategy: Strategy
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_strategy: StatusStrategy | None = None
    read_only: bool = False
    # Fields selectable with ?fieldSelector= besides metadata.name/namespace.
    selectable_fields: tuple[str, ...] = ()
    # Table columns: (name, type, description, priority, cell(obj) -> value).
    columns: tuple[tuple[str, str, str, int, Callable[[dict[str, Any]], Any]], ...] = ()
    subresources: tuple[str, ...] = field(default=())
    # Lists of maps merged by key in server-side apply (all other lists are atomic); superseded
    # by `field_types` when the kind has a schema.
    list_map_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Every list's and map's server-side apply type, from the schema (schema_nodes.merge_types).
    field_types: ListTypes | None = None

    @property
    def merge_types(self) -> ListTypes:
        return self.field_types or ListTypes(self.list_map_keys)

    # The kind's resource schema: its OpenAPI component (kubectl explain) is generated from it.
    schema: Field | None = None

    # Why a read-only kind is read-only and how to change it anyway: the 405's fix.
    read_only_fix: str = ""
    # The verbs served, when not the full set (or get/list/watch for read-only kinds).
    served_verbs: tuple[str, ...] = ()
    # Whether Tables frame `columns` with Name first and Age last (custom resources' printer);
    # False for kinds whose columns are kube's own complete set (core/v1 Events).
    name_and_age_columns: bool = True
    # Whether a cell depends on when it is printed (core Events' Last Seen), beyond the Age
    # column: then a row's cells are made at each answer, never kept with the object.
    dated_cells: bool = False
    # Whether the store keeps its objects, so the generic collection and item routes serve
    # it; False for a kind with views of its own (Namespaces are the accounts' projects).
    store_backed: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The store's name for the kind: plural.group, as kube-apiserver's group-resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def verbs(self) -> list[str]:
        if self.served_verbs:
            return list(self.served_verbs)
        if self.read_only:
            return ["get", "list", "watch"]
        return ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


# Keyed by `ResourceType.key` (plural.group; the plural alone in the core group), as
# kube-apiserver keys its storage by group-resource: core/v1 and nodus.dev may share a plural.
REGISTRY: dict[str, ResourceType] = {}


def register(rt: ResourceType) -> ResourceType:
    REGISTRY[rt.key] = rt
    return rt


def resource_key(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural
