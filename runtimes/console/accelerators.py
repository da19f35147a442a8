"""The Accelerators page: the catalog by family, and which runtimes have estimates for each.

Each family lists its variants (memory, interconnect, the accelerator class estimates are keyed
by, the offerings with their host shapes and prices); each class lists the runtimes the user may
read that measured a time for it (``spec.estimate.secondsPerStep`` or ``secondsPerTask``, also
under one of the class's earlier names). What an estimate is, is said on the page in the
contract's words; the numbers come from `runtimes.catalog.accelerators`, never restated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import AcceleratorCatalog, Variant, catalog
from runtimes.console.authorization import requires
from runtimes.console.catalog import readable_runtimes
from runtimes.console.summaries import human_duration
from runtimes.registry import authorization

READ_CATALOG = authorization.signed_in(
    "the accelerator catalog is the platform's, readable by everyone signed in (as the API's "
    "cluster-scoped accelerators); runtimes are listed only from the caller's projects"
)


@dataclass(frozen=True)
class Measured:
    namespace: str
    name: str
    per_step: str  # "" when the runtime has no step time for the class
    per_task: str


@dataclass(frozen=True)
class VariantView:
    variant: Variant
    per_gpu_hour: str
    offerings: tuple[tuple[int, str, str], ...]  # (count, host shape, price per hour)
    measured: int  # how many readable runtimes have a time for its class


@dataclass(frozen=True)
class ClassView:
    name: str
    variants: tuple[str, ...]
    runtimes: tuple[Measured, ...]


def _seconds(times: Any, keys: tuple[str, ...]) -> str:
    if not isinstance(times, dict):
        return ""
    for key in keys:
        value = times.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return human_duration(float(value))
    return ""


def measured_on(
    runtimes: list[Obj], accelerator_class: str, accelerators: AcceleratorCatalog
) -> list[Measured]:
    """The runtimes with a measured time for the class (by its name or an earlier one)."""
    keys = accelerators.class_keys(accelerator_class)
    found = []
    for obj in runtimes:
        estimate = (obj.get("spec") or {}).get("estimate") or {}
        if not isinstance(estimate, dict):
            continue
        per_step = _seconds(estimate.get("secondsPerStep"), keys)
        per_task = _seconds(estimate.get("secondsPerTask"), keys)
        if per_step or per_task:
            meta = obj["metadata"]
            found.append(Measured(meta["namespace"], meta["name"], per_step, per_task))
    return sorted(found, key=lambda m: (m.namespace, m.name))


def families(accelerators: AcceleratorCatalog, classes: list[ClassView]) -> list[dict[str, Any]]:
    measured = {c.name: len(c.runtimes) for c in classes}
    result = []
    for family in accelerators.families.values():
        views = []
        for variant_id in family.variants:
            variant = accelerators.variants[variant_id]
            per_gpu = min(o.price_per_hour / o.count for o in variant.offerings)
            views.append(
                VariantView(
                    variant,
                    f"${per_gpu:,.2f}",
                    tuple(
                        (
                            o.count,
                            f"{o.cpu} vCPU · {o.memory} · {o.disk} disk",
                            f"${o.price_per_hour:,.2f}",
                        )
                        for o in variant.offerings
                    ),
                    measured.get(variant.accelerator_class, 0),
                )
            )
        result.append({"family": family, "variants": views})
    return result


def classes(runtimes: list[Obj], accelerators: AcceleratorCatalog) -> list[ClassView]:
    """Each accelerator class (variants that train at the same speed share one), with the
    runtimes measured on it: said once per class, not once per variant."""
    return [
        ClassView(
            name,
            tuple(v.id for v in accelerators.variants.values() if v.accelerator_class == name),
            tuple(measured_on(runtimes, name, accelerators)),
        )
        for name in accelerators.classes
    ]


def matrix(by_class: list[ClassView]) -> list[tuple[str, str, list[str]]]:
    """One row per runtime measured on any class: (project, name, its time on each class, per
    step or else per task, "" where it has none), in the order of `by_class`."""
    times: dict[tuple[str, str], dict[str, str]] = {}
    for view in by_class:
        for m in view.runtimes:
            times.setdefault((m.namespace, m.name), {})[view.name] = (
                f"{m.per_step}/step" if m.per_step else f"{m.per_task}/task"
            )
    return [
        (namespace, name, [cells.get(view.name, "") for view in by_class])
        for (namespace, name), cells in sorted(times.items())
    ]


@requires(READ_CATALOG)
def accelerator_list(request: HttpRequest) -> HttpResponse:
    objects, _revision = readable_runtimes(request.user)
    by_class = classes(objects, catalog())
    return render(
        request,
        "console/accelerators.html",
        {
            "families": families(catalog(), by_class),
            "classes": by_class,
            "matrix": matrix(by_class),
        },
    )
