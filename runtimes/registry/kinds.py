"""Registers the kinds the API serves: TrainingRuntime, TrainingJob, the read-only Accelerator
catalog, and core/v1 Events (the controller's) and Namespaces (the projects, served from the
accounts' tables rather than the store: `runtimes.api.namespaces`).

TrainingRuntime and TrainingJob are in the `all` category, as a CRD may declare, so
`kubectl get all -n PROJECT` shows them; the cluster-scoped catalog is not (kube's `all` holds
namespaced workloads only)."""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.meta import GROUP, VERSION
from runtimes.apimachinery.schema_nodes import merge_types
from runtimes.catalog.accelerators import ACCELERATOR_COLUMNS, accelerator_table_row
from runtimes.registry.accelerator_schema import ACCELERATOR
from runtimes.registry.event import strategy as events
from runtimes.registry.resources import REGISTRY, ResourceType, register, resource_key
from runtimes.registry.strategy import Strategy
from runtimes.registry.trainingjob import schema as job_schema
from runtimes.registry.trainingjob import strategy as trainingjob
from runtimes.registry.trainingruntime import schema
from runtimes.registry.trainingruntime import strategy as trainingruntime

TRAINING_RUNTIMES = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind="TrainingRuntime",
        plural="trainingruntimes",
        singular="trainingruntime",
        namespaced=True,
        strategy=trainingruntime.STRATEGY,
        status_strategy=trainingruntime.STATUS_STRATEGY,
        short_names=("tr",),
        categories=("nodus", "all"),
        selectable_fields=schema.SELECTABLE_FIELDS,
        columns=trainingruntime.COLUMNS,
        subresources=("status", "compile"),
        field_types=merge_types(schema.TRAINING_RUNTIME),
        schema=schema.TRAINING_RUNTIME,
    )
)

TRAINING_JOBS = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind=job_schema.KIND,
        plural=job_schema.PLURAL,
        singular="trainingjob",
        namespaced=True,
        strategy=trainingjob.STRATEGY,
        status_strategy=trainingjob.STATUS_STRATEGY,
        short_names=("tj",),
        categories=("nodus", "all"),
        selectable_fields=job_schema.SELECTABLE_FIELDS,
        columns=trainingjob.COLUMNS,
        subresources=("status",),
        field_types=merge_types(job_schema.TRAINING_JOB),
        schema=job_schema.TRAINING_JOB,
    )
)


def _accelerator_cell(index: int) -> Any:
    return lambda obj: accelerator_table_row(obj)[index]


ACCELERATORS = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind="Accelerator",
        plural="accelerators",
        singular="accelerator",
        namespaced=False,
        strategy=Strategy(),
        short_names=("acc",),
        categories=("nodus",),
        read_only=True,
        field_types=merge_types(ACCELERATOR),
        schema=ACCELERATOR,
        read_only_fix="Accelerator objects are read-only through the API; platform admins "
        "change the catalog file and reload it.",
        columns=tuple(
            (c["name"], c["type"], c["description"], c["priority"], _accelerator_cell(index))
            for index, c in enumerate(ACCELERATOR_COLUMNS)
        ),
    )
)


EVENTS = register(
    ResourceType(
        group="",
        version="v1",
        kind=events.KIND,
        plural="events",
        singular="event",
        namespaced=True,
        strategy=events.STRATEGY,
        short_names=("ev",),
        read_only=True,
        read_only_fix="Events are written by nodus's controller as it reconciles; they expire "
        "after an hour (NODUS_EVENTS_TTL_SECONDS).",
        selectable_fields=events.SELECTABLE_FIELDS,
        columns=events.COLUMNS,
        name_and_age_columns=False,
    )
)

# The same Events as events.k8s.io/v1 (kube serves both from one storage): read through
# `runtimes.api.eventsv1`, which converts each core Event (regarding, note, deprecated*).
EVENTS_V1 = register(
    ResourceType(
        group=events.EVENTS_GROUP,
        version="v1",
        kind=events.KIND,
        plural="events",
        singular="event",
        namespaced=True,
        strategy=events.STRATEGY,
        short_names=("ev",),
        read_only=True,
        read_only_fix=EVENTS.read_only_fix,
        served_verbs=("get", "list"),
        store_backed=False,
        columns=events.COLUMNS,
        name_and_age_columns=False,
    )
)

NAMESPACES = register(
    ResourceType(
        group="",
        version="v1",
        kind="Namespace",
        plural="namespaces",
        singular="namespace",
        namespaced=False,
        strategy=Strategy(),
        short_names=("ns",),
        read_only=True,
        read_only_fix="Namespaces are nodus projects: platform admins create them in the console "
        "or with `manage.py createproject`.",
        served_verbs=("get", "list"),
        store_backed=False,
        columns=(
            (
                "Status",
                "string",
                "The status of the namespace",
                0,
                lambda obj: (obj.get("status") or {}).get("phase", ""),
            ),
        ),
    )
)


def lookup(plural: str, group: str = GROUP) -> ResourceType | None:
    """The kind served as `plural` in `group` (ours unless named; "" is the core group)."""
    return REGISTRY.get(resource_key(plural, group))


def all_kinds() -> list[ResourceType]:
    return list(REGISTRY.values())


def stored_kinds() -> list[ResourceType]:
    """The kinds whose objects the store keeps (what informers and the collector follow)."""
    return [rt for rt in REGISTRY.values() if rt.store_backed]


def for_reference(api_version: str, kind: str) -> ResourceType | None:
    """The kind an owner reference (or any apiVersion + kind) names: its group, version and kind
    must all be served, as kube's REST mapper maps a reference (no match: None)."""
    for rt in stored_kinds():
        if rt.api_version == api_version and rt.kind == kind:
            return rt
    return None
