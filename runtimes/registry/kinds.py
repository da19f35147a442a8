"""Registers the kinds the store serves: TrainingRuntime, TrainingJob and the read-only Accelerator
catalog."""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.meta import GROUP, VERSION
from runtimes.apimachinery.schema_nodes import merge_types
from runtimes.catalog.accelerators import ACCELERATOR_COLUMNS, accelerator_table_row
from runtimes.registry.accelerator_schema import ACCELERATOR
from runtimes.registry.resources import REGISTRY, ResourceType, register
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
        categories=("nodus",),
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
        categories=("nodus",),
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
        columns=tuple(
            (c["name"], c["type"], c["description"], c["priority"], _accelerator_cell(index))
            for index, c in enumerate(ACCELERATOR_COLUMNS)
        ),
    )
)


def lookup(plural: str) -> ResourceType | None:
    return REGISTRY.get(plural)


def all_kinds() -> list[ResourceType]:
    return list(REGISTRY.values())


def for_reference(api_version: str, kind: str) -> ResourceType | None:
    """The kind an owner reference (or any apiVersion + kind) names: its group, version and kind
    must all be served, as kube's REST mapper maps a reference (no match: None)."""
    for rt in REGISTRY.values():
        if rt.api_version == api_version and rt.kind == kind:
            return rt
    return None
