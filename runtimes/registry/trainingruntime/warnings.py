"""Soft problems with a TrainingRuntime spec: accepted, but worth a ``Warning`` header.

Each warning names the field it is about and what to do, in the form kubectl prints
(``Warning: spec.requires.teacher: …``). None of these block a write.
"""

from __future__ import annotations

from typing import Any

from runtimes.catalog.gpu_rules import AcceleratorCatalog, classes_for, gpu_requests
from runtimes.registry.trainingruntime.images import image_warnings

# Tasks that train on a dataset, so a runtime for them normally requires spec.data.
_DATA_TASKS = frozenset({"SFT", "Pretrain", "DPO", "ORPO", "KTO", "Reward"})


def _dict(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _reachable_classes(gpu: dict[str, Any], catalog: AcceleratorCatalog) -> set[str]:
    entries = gpu.get("type")
    if not isinstance(entries, list):
        return set()
    exact = gpu.get("exact") is True
    return set().union(*(classes_for(e, catalog, exact) for e in entries if isinstance(e, str)))


# The spec fields each warning is computed from: a write that leaves them as they were is not
# told again (a `kubectl label`, a new image), one that changes any of them is.
_REQUIREMENTS = ("task", "requires")
_TASK_TIMES = ("task", "estimate", "modes")
_COVERAGE = ("task", "estimate", "presets", "defaults")
_IMAGE = ("image",)


def spec_warnings(spec: Any, catalog: AcceleratorCatalog) -> list[str]:
    """Soft problems: accepted specs that will probably not behave as their author expects."""
    return [text for text, _causes in _tagged(spec, catalog)]


def update_warnings(spec: Any, old_spec: Any, catalog: AcceleratorCatalog) -> list[str]:
    """The warnings of a write: on an update, only those whose fields it changed (each is said
    once per change that causes it, not on every write)."""
    if not isinstance(old_spec, dict) or not isinstance(spec, dict):
        return spec_warnings(spec, catalog)
    return [
        text
        for text, causes in _tagged(spec, catalog)
        if any(spec.get(key) != old_spec.get(key) for key in causes)
    ]


def _tagged(spec: Any, catalog: AcceleratorCatalog) -> list[tuple[str, tuple[str, ...]]]:
    """Each warning with the top-level spec fields it is computed from."""
    if not isinstance(spec, dict):
        return []
    task = spec.get("task") if isinstance(spec.get("task"), str) else None
    requires = _dict(spec, "requires")
    estimate = _dict(spec, "estimate")
    warnings: list[tuple[str, tuple[str, ...]]] = []
    if task == "Distill" and requires.get("teacher") is not True:
        warnings.append(
            (
                "spec.requires.teacher: a Distill runtime learns from a teacher model; set "
                "requires.teacher: true so every job names one",
                _REQUIREMENTS,
            )
        )
    if task in _DATA_TASKS and requires.get("data") is not True:
        warnings.append(
            (
                f"spec.requires.data: a {task} runtime trains on a dataset; set requires.data: "
                "true so every job names one",
                _REQUIREMENTS,
            )
        )
    step_key = "secondsPerTask" if task == "Evaluate" else "secondsPerStep"
    if task == "Evaluate" and not _dict(estimate, "secondsPerTask"):
        warnings.append(
            (
                "spec.estimate.secondsPerTask: an Evaluate runtime without task times gives jobs "
                "no expected duration; add the measured seconds per task for each accelerator "
                "class",
                _TASK_TIMES,
            )
        )
    if (
        task not in (None, "Evaluate")
        and _dict(estimate, "secondsPerTask")
        and not _lists(spec.get("modes"), "Evaluate")
    ):
        warnings.append(
            (
                "spec.estimate.secondsPerTask: only evaluation uses task times, and this "
                "runtime's modes do not include Evaluate",
                _TASK_TIMES,
            )
        )
    coverage = _estimate_coverage(spec, catalog, _dict(estimate, step_key), step_key)
    warnings.extend((text, _COVERAGE) for text in coverage)
    warnings.extend((text, _IMAGE) for text in image_warnings(spec))
    return warnings


def _lists(value: Any, item: str) -> bool:
    """Whether `value` is a list holding `item` (a spec of the wrong shape holds nothing)."""
    return isinstance(value, list) and item in value


def _estimate_coverage(
    spec: dict[str, Any], catalog: AcceleratorCatalog, times: dict[str, Any], key: str
) -> list[str]:
    """Presets that can land on classes without a measured time, and times no preset uses."""
    requests = list(gpu_requests(spec))
    if not requests:
        return []
    warnings: list[str] = []
    reachable: set[str] = set()
    for path, gpu in requests:
        classes = _reachable_classes(gpu, catalog)
        reachable |= classes
        missing = sorted(c for c in classes if c not in times)
        if times and missing:
            warnings.append(
                f"{path}.type: no spec.estimate.{key} for accelerator class(es) "
                f"{', '.join(missing)}; jobs placed there show no expected duration"
            )
    for name in ("secondsPerStep", "secondsPerTask"):
        for cls in _dict(_dict(spec, "estimate"), name):
            if cls in catalog.classes and cls not in reachable:
                warnings.append(
                    f"spec.estimate.{name}[{cls}]: no preset or default GPU request can run on "
                    "this accelerator class, so the time is never used"
                )
    return warnings
