"""The hardware choice on the Parameters tab: the offerings a job could run on, by cost.

The plan is what the job compiles to (its first offering; the job's accelerator narrows it).
Beside it the tab shows every offering the job could have had, the same draft compiled without
its accelerator, so choosing one never hides the others: sorted by duration or by cost, the
cheapest and the fastest marked, each with a button that makes it the plan (it sets the job's
accelerator to that variant, and the form checks again). The accelerator menu groups the
catalog's variants under their families, with memory and the price per hour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import AcceleratorCatalog
from runtimes.catalog.compile import CompileResult, OfferingPlan, compile_job
from runtimes.console.summaries import human_duration

ORDERS = (("duration", "Fastest first"), ("cost", "Cheapest first"))
MAX_ROWS = 12


@dataclass(frozen=True)
class OfferingRow:
    plan: OfferingPlan
    duration: str
    cost: str
    why: tuple[str, ...]
    cheapest: bool
    fastest: bool
    planned: bool  # the offering the job's plan uses

    @property
    def variant(self) -> str:
        return self.plan.offering.variant


def _key(plan: OfferingPlan) -> tuple[str, int]:
    return plan.offering.variant, plan.offering.count


def offering_rows(
    runtime: Obj,
    body: Mapping[str, Any],
    compiled: CompileResult | None,
    catalog: AcceleratorCatalog,
    order: str,
) -> list[OfferingRow]:
    """Every offering the draft could run on, in `order` ("duration" or "cost"), marked."""
    if compiled is None:
        return []
    unpinned = {k: v for k, v in body.items() if k != "accelerator"}
    outcome = compile_job(runtime, unpinned, catalog) if "accelerator" in body else compiled
    plans = list(outcome.offerings if isinstance(outcome, CompileResult) else compiled.offerings)
    planned = _key(compiled.offerings[0]) if compiled.offerings else None
    timed = [p for p in plans if p.seconds is not None]
    fastest = min(timed, key=lambda p: (p.seconds or 0.0, p.cost or 0.0), default=None)
    cheapest = min(timed, key=lambda p: (p.cost or 0.0, p.seconds or 0.0), default=None)
    if order == "cost":
        plans.sort(key=lambda p: (p.cost is None, p.cost or 0.0, p.seconds or 0.0))
    rows = [
        OfferingRow(
            plan=p,
            duration=human_duration(p.seconds) if p.seconds is not None else "",
            cost=f"${p.cost:,.2f}" if p.cost is not None else "",
            why=tuple(r.message for r in p.match.reasons),
            cheapest=p is cheapest,
            fastest=p is fastest,
            planned=_key(p) == planned,
        )
        for p in plans
    ]
    # The marked rows and the plan stay in the table however many offerings there are.
    kept = rows[:MAX_ROWS]
    kept += [r for r in rows[MAX_ROWS:] if r.cheapest or r.fastest or r.planned]
    return kept


def order_of(data: Any) -> str:
    asked = str(data.get("_offers", "") or "")
    return asked if asked in dict(ORDERS) else "duration"


@dataclass(frozen=True)
class MenuChoice:
    value: str
    label: str
    selected: bool


def accelerator_groups(
    offered: list[str], current: str, catalog: AcceleratorCatalog
) -> list[tuple[str, list[MenuChoice]]]:
    """The accelerator menu's optgroups: one per family, the family itself first ("any H100"),
    then its variants, each with memory and the lowest price per hour. A value the form
    brought that the catalog does not know is kept in a group of its own, so it round-trips."""
    groups: dict[str, list[MenuChoice]] = {}
    known: set[str] = set()
    for name in offered:
        family = catalog.family_of(name)
        if family is None:
            continue
        known.add(name)
        items = groups.setdefault(family.name, [])
        if name == family.name:
            variants = [catalog.variants[v] for v in family.variants]
            prices = [o.price_per_hour for v in variants for o in v.offerings]
            by_size = {v.memory_bytes: v.memory for v in variants}
            memories = [by_size[size] for size in sorted(by_size)]
            label = f"any {family.name} · {'/'.join(memories)} · from ${min(prices):,.2f}/h GPU"
            items.insert(0, MenuChoice(name, label, name == current))
        else:
            variant = catalog.variants[name]
            per_gpu = min(o.price_per_hour / o.count for o in variant.offerings)
            label = f"{name} · {variant.memory} · {variant.interconnect} · ${per_gpu:,.2f}/h GPU"
            items.append(MenuChoice(name, label, name == current))
    if current and current not in known:
        groups["Other"] = [MenuChoice(current, current, True)]
    return list(groups.items())
