"""Expected duration and cost of a job on each offering, from a runtime's measured times.

Training: ``steps x secondsPerStep[class]``, scaled by how much more ``batchSize``,
``gradientAccumulation`` and ``maxCompletionLength`` the job sets than the runtime's defaults
(each factor is job / default when the job sets more, else 1). Evaluation:
``tasks x secondsPerTask[class]``. Cost: hours x the offering's hourly price x nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runtimes.catalog.accelerators import AcceleratorCatalog, Offering
from runtimes.catalog.matching import match_gpu

# The parameters whose growth slows a step roughly in proportion (more tokens per step).
SCALED_PARAMETERS = ("batchSize", "gradientAccumulation", "maxCompletionLength")


@dataclass(frozen=True)
class EstimateRow:
    accelerator_class: str
    seconds: float
    offering: Offering
    nodes: int
    cost: float  # USD for the whole run on all nodes

    def as_dict(self) -> dict[str, Any]:
        return {
            "acceleratorClass": self.accelerator_class,
            "seconds": self.seconds,
            "offering": self.offering.as_dict(),
            "nodes": self.nodes,
            "cost": self.cost,
        }


def scale_factors(
    default_parameters: Mapping[str, Any] | None, job_parameters: Mapping[str, Any] | None
) -> dict[str, float]:
    """The factor per scaled parameter: job ÷ default when the job sets more, else 1."""
    defaults = default_parameters or {}
    job = job_parameters or {}
    factors: dict[str, float] = {}
    for name in SCALED_PARAMETERS:
        base, value = _number(defaults.get(name)), _number(job.get(name))
        # Without a positive numeric default there is nothing to compare against.
        if base is not None and base > 0 and value is not None and value > base:
            factors[name] = value / base
        else:
            factors[name] = 1.0
    return factors


def seconds_for(
    runtime_spec: Mapping[str, Any],
    job_parameters: Mapping[str, Any] | None,
    work: Mapping[str, int],
    accelerator_class: str,
    aliases: Iterable[str] = (),
) -> float | None:
    """The expected run time on one accelerator class, or None when it was never measured.

    ``aliases`` are earlier names of the class an estimate may still be keyed by.
    """
    estimate = runtime_spec.get("estimate") or {}
    keys = (accelerator_class, *aliases)
    if "steps" in work:
        per_step = _measured(estimate.get("secondsPerStep"), keys)
        if per_step is None:
            return None
        defaults = (runtime_spec.get("defaults") or {}).get("parameters")
        seconds = float(work["steps"]) * float(per_step)
        for factor in scale_factors(defaults, job_parameters).values():
            seconds *= factor
        return seconds
    per_task = _measured(estimate.get("secondsPerTask"), keys)
    if per_task is None:
        return None
    return float(work["tasks"]) * float(per_task)


def cost_of(seconds: float, offering: Offering, nodes: int) -> float:
    """USD for ``seconds`` on ``nodes`` nodes of this offering, to a hundredth of a cent."""
    return round(seconds / 3600 * offering.price_per_hour * nodes, 4)


def estimate(
    runtime_spec: Mapping[str, Any],
    job_parameters: Mapping[str, Any] | None,
    work: Mapping[str, int],
    catalog: AcceleratorCatalog,
    resources: Mapping[str, Any] | None = None,
    offerings: Iterable[Offering] | None = None,
) -> list[EstimateRow]:
    """One row per offering whose class was measured, fastest first (then cheapest).

    ``work`` is ``{"steps": n}`` (training) or ``{"tasks": n}`` (evaluation), as the job
    sets it. The offerings are those matching ``resources`` (default: the runtime's
    ``defaults.resources``) unless given explicitly.
    """
    if ("steps" in work) == ("tasks" in work):
        raise ValueError("work must name exactly one of steps or tasks")
    if resources is None:
        resources = (runtime_spec.get("defaults") or {}).get("resources") or {}
    if offerings is None:
        offerings = [o for m in match_gpu(resources.get("gpu"), catalog) for o in m.offerings]
    nodes = int(resources.get("nodes") or 1)
    rows: list[EstimateRow] = []
    for offering in offerings:
        accelerator_class = catalog.variants[offering.variant].accelerator_class
        aliases = catalog.class_keys(accelerator_class)[1:]
        seconds = seconds_for(runtime_spec, job_parameters, work, accelerator_class, aliases)
        if seconds is None:
            continue
        rows.append(
            EstimateRow(
                accelerator_class, seconds, offering, nodes, cost_of(seconds, offering, nodes)
            )
        )
    rows.sort(key=lambda r: (r.seconds, r.cost, r.offering.variant, r.offering.count))
    return rows


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _measured(by_class: Any, keys: Iterable[str]) -> Any:
    if not isinstance(by_class, Mapping):
        return None
    return next((by_class[k] for k in keys if by_class.get(k) is not None), None)
