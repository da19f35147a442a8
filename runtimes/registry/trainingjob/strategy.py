"""The TrainingJob kind: its strategies and printer columns.

Defaults live in `defaulting`, admission (compiling against the runtime) in `admission`, fields
in `schema`; this module says when each applies. A job is compiled at admission whenever its
spec changes (a write that leaves the spec alone, such as a label or a finalizer, is not
refused because its runtime moved on). Status is the job controller's: the main endpoint keeps
it, and while it describes an older generation, or a recompile was asked for and not yet done,
the phase reads Pending.
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.fielderrors import FieldError, required
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.structural import structural_errors
from runtimes.registry.strategy import (
    StatusStrategy,
    Strategy,
    cell,
    custom_resource_warnings,
)
from runtimes.registry.trainingjob import admission, defaulting, schema


def _status(obj: Obj) -> Obj:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def recompile_request(obj: Obj) -> str:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(schema.RECOMPILE_ANNOTATION) or "")


class TrainingJobStrategy(Strategy):
    root_schema = schema.TRAINING_JOB

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            namespace = obj.get("metadata", {}).get("namespace") or ""
            obj["spec"] = defaulting.default_spec(spec, namespace, admission.read_runtime(obj))

    def derive(self, obj: Obj) -> None:
        status = dict(_status(obj))
        if status.get("observedGeneration") != obj["metadata"].get("generation") or (
            status.get("recompileRequest") or ""
        ) != recompile_request(obj):
            # A status about an older spec (or before an asked-for recompile) says nothing
            # about this one yet.
            status["phase"] = "Pending"
        status.setdefault("phase", "Pending")
        obj["status"] = status

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        spec = obj.get("spec")
        if spec is None:
            return [required("spec")]
        errors = structural_errors(spec, schema.SPEC, "spec")
        if errors or not isinstance(spec, dict):
            return errors
        if old is not None and old.get("spec") == spec:
            return []
        return list(dict.fromkeys(admission.compile_errors(obj)))

    def warnings(self, obj: Obj, old: Obj | None) -> list[str]:
        found = custom_resource_warnings(obj, old)
        if old is not None and old.get("spec") == obj.get("spec"):
            return found
        compiled = admission.compile_warnings(obj) if isinstance(obj.get("spec"), dict) else []
        return found + compiled


class TrainingJobStatusStrategy(StatusStrategy):
    def validate_status(self, obj: Obj) -> list[FieldError]:
        status = obj.get("status")
        return [] if status is None else structural_errors(status, schema.STATUS, "status")


def format_duration(seconds: Any) -> str:
    """Go's rounded duration style: 45s, 12m30s, 3h20m, 2d4h; empty when unknown."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return ""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def _duration(obj: Obj) -> str:
    return format_duration(cell("status.compiled.seconds")(obj))


def _cost(obj: Obj) -> str:
    cost = cell("status.compiled.cost")(obj)
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return ""
    return f"${cost:,.2f}"


def _accelerator(obj: Obj) -> Any:
    return cell("status.compiled.accelerator")(obj) or cell("spec.accelerator")(obj)


STRATEGY = TrainingJobStrategy()
STATUS_STRATEGY = TrainingJobStatusStrategy(STRATEGY)

COLUMNS = (
    (
        "Runtime",
        "string",
        "The runtime the job compiles against.",
        0,
        cell("spec.runtimeRef.name"),
    ),
    ("Model", "string", "The model trained or evaluated.", 0, cell("spec.model")),
    ("Method", "string", "Full, LoRA or QLoRA.", 0, cell("spec.method")),
    (
        "Accelerator",
        "string",
        "The accelerator of the fastest matching offering (or the one the job names).",
        0,
        _accelerator,
    ),
    ("Duration", "string", "The expected duration on that offering.", 0, _duration),
    ("Cost", "string", "The expected cost on that offering, in USD.", 0, _cost),
    (
        "Phase",
        "string",
        "Pending until compiled against a Ready runtime, then Compiled or Invalid.",
        0,
        cell("status.phase"),
    ),
)
