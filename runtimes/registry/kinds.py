"""Registers the kinds the API serves, each laid out as `registry/<kind>/` (schema, strategy
with its columns, and its defaulting and validation where it has them): TrainingRuntime,
TrainingJob, the read-only Accelerator catalog, core/v1 Events (the controller's) and
Namespaces (the projects, made from the accounts' tables: `runtimes.api.namespaces`).

TrainingRuntime and TrainingJob are in the `all` category, as a CRD may declare, so
`kubectl get all -n PROJECT` shows them; the cluster-scoped catalog is not (kube's `all` holds
namespaced workloads only)."""

from __future__ import annotations

from runtimes.apimachinery.meta import GROUP, VERSION
from runtimes.apimachinery.schema_nodes import merge_types
from runtimes.registry.accelerator import schema as accelerator_schema
from runtimes.registry.accelerator import strategy as accelerator
from runtimes.registry.event import schema as event_schema
from runtimes.registry.event import strategy as event
from runtimes.registry.namespace import schema as namespace_schema
from runtimes.registry.namespace import strategy as namespace
from runtimes.registry.resources import REGISTRY, ResourceType, register, resource_key
from runtimes.registry.trainingjob import schema as trainingjob_schema
from runtimes.registry.trainingjob import strategy as trainingjob
from runtimes.registry.trainingruntime import schema as trainingruntime_schema
from runtimes.registry.trainingruntime import strategy as trainingruntime

TRAINING_RUNTIMES = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind=trainingruntime_schema.KIND,
        plural=trainingruntime_schema.PLURAL,
        singular="trainingruntime",
        namespaced=True,
        strategy=trainingruntime.STRATEGY,
        status_strategy=trainingruntime.STATUS_STRATEGY,
        short_names=("tr",),
        categories=("nodus", "all"),
        selectable_fields=trainingruntime_schema.SELECTABLE_FIELDS,
        columns=trainingruntime.COLUMNS,
        subresources=("status", "compile"),
        field_types=merge_types(trainingruntime_schema.TRAINING_RUNTIME),
        schema=trainingruntime_schema.TRAINING_RUNTIME,
    )
)

TRAINING_JOBS = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind=trainingjob_schema.KIND,
        plural=trainingjob_schema.PLURAL,
        singular="trainingjob",
        namespaced=True,
        strategy=trainingjob.STRATEGY,
        status_strategy=trainingjob.STATUS_STRATEGY,
        short_names=("tj",),
        categories=("nodus", "all"),
        selectable_fields=trainingjob_schema.SELECTABLE_FIELDS,
        columns=trainingjob.COLUMNS,
        subresources=("status",),
        field_types=merge_types(trainingjob_schema.TRAINING_JOB),
        schema=trainingjob_schema.TRAINING_JOB,
    )
)


ACCELERATORS = register(
    ResourceType(
        group=GROUP,
        version=VERSION,
        kind=accelerator_schema.KIND,
        plural=accelerator_schema.PLURAL,
        singular="accelerator",
        namespaced=False,
        strategy=accelerator.STRATEGY,
        short_names=("acc",),
        categories=("nodus",),
        read_only=True,
        field_types=merge_types(accelerator_schema.ACCELERATOR),
        schema=accelerator_schema.ACCELERATOR,
        read_only_fix="Accelerator objects are read-only through the API; platform admins "
        "change the catalog file and reload it.",
        columns=accelerator.COLUMNS,
    )
)


EVENTS = register(
    ResourceType(
        group="",
        version="v1",
        kind=event_schema.KIND,
        plural=event_schema.PLURAL,
        singular="event",
        namespaced=True,
        strategy=event.STRATEGY,
        short_names=("ev",),
        read_only=True,
        read_only_fix="Events are written by nodus's controller as it reconciles; they expire "
        "after an hour (NODUS_EVENTS_TTL_SECONDS).",
        selectable_fields=event_schema.SELECTABLE_FIELDS,
        columns=event.COLUMNS,
        name_and_age_columns=False,
        dated_cells=True,
    )
)

# The same Events as events.k8s.io/v1 (kube serves both from one storage): read through
# `runtimes.api.eventsv1`, which converts each core Event (regarding, note, deprecated*).
EVENTS_V1 = register(
    ResourceType(
        group=event_schema.EVENTS_GROUP,
        version="v1",
        kind=event_schema.KIND,
        plural=event_schema.PLURAL,
        singular="event",
        namespaced=True,
        strategy=event.STRATEGY,
        short_names=("ev",),
        read_only=True,
        read_only_fix=EVENTS.read_only_fix,
        served_verbs=("get", "list"),
        store_backed=False,
        columns=event.COLUMNS,
        name_and_age_columns=False,
        dated_cells=True,
    )
)

NAMESPACES = register(
    ResourceType(
        group="",
        version="v1",
        kind=namespace_schema.KIND,
        plural=namespace_schema.PLURAL,
        singular="namespace",
        namespaced=False,
        strategy=namespace.STRATEGY,
        short_names=("ns",),
        read_only=True,
        read_only_fix="Namespaces are nodus projects: platform admins create them in the console "
        "or with `manage.py createproject`.",
        served_verbs=("get", "list"),
        store_backed=False,
        columns=namespace.COLUMNS,
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
