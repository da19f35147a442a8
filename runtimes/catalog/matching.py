"""GPU matching and effective resources: which offerings satisfy a runtime's GPU request.

Pure functions over an `AcceleratorCatalog`. A family (``H100``) matches all of its variants
and never another family; a variant id matches its whole family unless ``exact: true``;
``minMemory`` and ``interconnect: NVLink`` filter; ``count`` must be offered for the variant.
Every match carries the reasons it matched (or, from `explain_gpu`, why it did not) so a UI
can show them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from runtimes.apimachinery.quantities import parse_quantity
from runtimes.catalog.accelerators import AcceleratorCatalog, Offering, Variant

# Why a variant was selected, and which filters it passed: a UI shows `message`, and can
# style or group by `kind`.
FAMILY = "Family"  # the request named the variant's family
EXACT_PIN = "ExactPin"  # the request named the variant's id with exact: true
NAMED = "Named"  # the request named the variant's id (exact: false: its family matches too)
SAME_FAMILY = "SameFamily"  # the request named another id of the same family
MEMORY = "Memory"
INTERCONNECT = "Interconnect"
COUNT = "Count"


@dataclass(frozen=True)
class Reason:
    kind: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Match:
    """One variant the request selected; it fits when nothing rejected it."""

    variant: Variant
    via: str  # the gpu.type entry that selected it
    rule: str  # FAMILY, EXACT_PIN, NAMED or SAME_FAMILY
    reasons: tuple[Reason, ...]
    rejections: tuple[Reason, ...]
    offerings: tuple[Offering, ...]  # the (variant, count) offerings that fit

    @property
    def fits(self) -> bool:
        return not self.rejections

    def as_dict(self) -> dict[str, Any]:
        return {
            "accelerator": self.variant.id,
            "family": self.variant.family,
            "acceleratorClass": self.variant.accelerator_class,
            "via": self.via,
            "rule": self.rule,
            "fits": self.fits,
            "reasons": [r.as_dict() for r in self.reasons],
            "rejections": [r.as_dict() for r in self.rejections],
            "offerings": [o.as_dict() for o in self.offerings],
        }


def explain_gpu(gpu_request: Mapping[str, Any] | None, catalog: AcceleratorCatalog) -> list[Match]:
    """Every variant the request's types select, each with why it fits or why it does not.

    Order follows the request's ``type`` list (its preference), then catalog order; a variant
    selected by two entries appears once, for the first. Unknown entries select nothing
    (validation reports them).
    """
    if not gpu_request or not gpu_request.get("type"):
        return []
    exact = bool(gpu_request.get("exact", False))
    count = int(gpu_request.get("count") or 1)
    floor_text = gpu_request.get("minMemory")
    floor = parse_quantity(floor_text) if floor_text not in (None, "") else None
    nvlink_only = gpu_request.get("interconnect") == "NVLink"

    matches: dict[str, Match] = {}
    for entry in gpu_request["type"]:
        for variant, rule, reason in _selected(str(entry), exact, catalog):
            if variant.id in matches:
                continue
            reasons = [reason]
            rejections: list[Reason] = []
            _check_memory(variant, floor, floor_text, reasons, rejections)
            if nvlink_only:
                if variant.nvlink:
                    reasons.append(Reason(INTERCONNECT, "NVLink between the GPUs of a host"))
                else:
                    rejections.append(Reason(INTERCONNECT, f"{variant.interconnect}, not NVLink"))
            offering = variant.offering(count)
            if offering is not None:
                reasons.append(Reason(COUNT, f"{count} GPU{_s(count)} per node offered"))
            else:
                offered = ", ".join(str(o.count) for o in variant.offerings)
                rejections.append(
                    Reason(COUNT, f"{count} GPU{_s(count)} per node not offered (only {offered})")
                )
            matches[variant.id] = Match(
                variant=variant,
                via=str(entry),
                rule=rule,
                reasons=tuple(reasons),
                rejections=tuple(rejections),
                offerings=(offering,) if offering is not None and not rejections else (),
            )
    return list(matches.values())


def match_gpu(gpu_request: Mapping[str, Any] | None, catalog: AcceleratorCatalog) -> list[Match]:
    """The variants that satisfy the request, each with its reasons and fitting offerings."""
    return [m for m in explain_gpu(gpu_request, catalog) if m.fits]


def _selected(
    entry: str, exact: bool, catalog: AcceleratorCatalog
) -> list[tuple[Variant, str, Reason]]:
    if catalog.is_family(entry):
        return [
            (catalog.variants[v], FAMILY, Reason(FAMILY, f"family {entry}"))
            for v in catalog.families[entry].variants
        ]
    pinned = catalog.variant(entry)
    if pinned is None:
        return []
    if exact:
        return [(pinned, EXACT_PIN, Reason(EXACT_PIN, f"pinned exactly: {entry}"))]
    family = catalog.families[pinned.family]
    selected = []
    for variant_id in family.variants:
        if variant_id == entry:
            selected.append((pinned, NAMED, Reason(NAMED, f"named: {entry}")))
        else:
            message = f"same family ({family.name}) as {entry}"
            selected.append(
                (catalog.variants[variant_id], SAME_FAMILY, Reason(SAME_FAMILY, message))
            )
    return selected


def _check_memory(
    variant: Variant,
    floor: Decimal | None,
    floor_text: Any,
    reasons: list[Reason],
    rejections: list[Reason],
) -> None:
    if floor is None:
        return
    if variant.memory_bytes >= floor:
        reasons.append(Reason(MEMORY, f"{variant.memory} per GPU ≥ minMemory {floor_text}"))
    else:
        rejections.append(Reason(MEMORY, f"{variant.memory} per GPU < minMemory {floor_text}"))


def _s(count: int) -> str:
    return "" if count == 1 else "s"


HOST_RESOURCES = ("cpu", "memory", "disk")


def effective_resources(
    resources: Mapping[str, Any] | None, offering: Offering | None
) -> dict[str, Any]:
    """The resources a node gets on this offering: the larger of each floor and the host shape.

    The GPU request collapses to the chosen variant and count (``exact: true``), so the result
    is itself a valid Resources object. Without an offering (CPU work) the floors stand.
    """
    effective = copy.deepcopy(dict(resources or {}))
    if offering is None:
        return effective
    host = offering.host()
    for key in HOST_RESOURCES:
        floor = effective.get(key)
        if floor in (None, "") or parse_quantity(host[key]) > parse_quantity(floor):
            effective[key] = host[key]
    effective["gpu"] = {"type": [offering.variant], "count": offering.count, "exact": True}
    return effective
