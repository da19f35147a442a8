"""The TrainingRuntime kind: its strategies and printer columns.

Rules live in `runtimes.registry.trainingruntime.validation`, defaults in
`runtimes.registry.trainingruntime.defaulting`, fields in
`runtimes.registry.trainingruntime.schema`; this module only says when each applies. Status is the
controller's: the main endpoint keeps it, and whenever it describes an older generation the phase
reads Pending.
"""

from __future__ import annotations

from runtimes.accounts.access import MANAGED_PROJECT
from runtimes.apimachinery.fielderrors import FieldError, required
from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import catalog
from runtimes.registry.strategy import (
    StatusStrategy,
    Strategy,
    cell,
    custom_resource_warnings,
)
from runtimes.registry.trainingruntime import defaulting, schema, validation
from runtimes.registry.trainingruntime.images import managed_image_errors
from runtimes.registry.trainingruntime.warnings import update_warnings


def _status(obj: Obj) -> Obj:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


class TrainingRuntimeStrategy(Strategy):
    root_schema = schema.TRAINING_RUNTIME

    def default(self, obj: Obj) -> None:
        if isinstance(obj.get("spec"), dict):
            obj["spec"] = defaulting.default_spec(obj["spec"])

    def derive(self, obj: Obj) -> None:
        status = dict(_status(obj))
        status["managed"] = obj["metadata"].get("namespace") == MANAGED_PROJECT
        if status.get("observedGeneration") != obj["metadata"].get("generation"):
            # A status about an older generation says nothing about this spec yet.
            status["phase"] = "Pending"
        status.setdefault("phase", "Pending")
        obj["status"] = status

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        spec = obj.get("spec")
        if spec is None:
            return [required("spec")]
        found = validation.validate_spec(spec, catalog())
        if obj["metadata"].get("namespace") == MANAGED_PROJECT:
            found += managed_image_errors(spec, old.get("spec") if old is not None else None)
        return found

    def warnings(self, obj: Obj, old: Obj | None) -> list[str]:
        spec = obj.get("spec")
        found = custom_resource_warnings(obj, old)
        if not isinstance(spec, dict):
            return found
        # An update is warned about what it changed: a label on a runtime whose estimate lacks
        # a class prints nothing; a new preset or estimate says it again.
        old_spec = old.get("spec") if old is not None else None
        return found + update_warnings(spec, old_spec, catalog())


class TrainingRuntimeStatusStrategy(StatusStrategy):
    def validate_status(self, obj: Obj) -> list[FieldError]:
        return validation.validate_status(_status(obj))


def _modes(obj: Obj) -> str:
    return ",".join(obj.get("spec", {}).get("modes") or [])


STRATEGY = TrainingRuntimeStrategy()
STATUS_STRATEGY = TrainingRuntimeStatusStrategy(STRATEGY)

COLUMNS = (
    ("Task", "string", "The kind of training the runtime implements.", 0, cell("spec.task")),
    (
        "Launcher",
        "string",
        "How the trainer is started across GPUs and nodes.",
        0,
        cell("spec.launcher"),
    ),
    (
        "Phase",
        "string",
        "Pending until the image is verified, then Ready or Failed.",
        0,
        cell("status.phase"),
    ),
    (
        "Managed",
        "boolean",
        "Whether the runtime belongs to the managed catalog.",
        0,
        cell("status.managed"),
    ),
    ("Modes", "string", "Train and/or Evaluate.", 1, _modes),
    ("Image Digest", "string", "The verified image digest.", 1, cell("status.imageDigest")),
)
