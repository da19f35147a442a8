"""Admission of a TrainingJob is compilation: a job that would not compile is never stored.

`compile_errors` reads the runtime the job names and compiles the spec against it
(``runtimes.catalog.compile``), turning each problem into a cause under ``spec.`` (the draft's
``parameters.learningRate`` is the job's ``spec.parameters.learningRate``). A job names a runtime
of its own project or of the managed project ``nodus``, which every signed-in user may read:
admission reads the runtime on the writer's behalf, so it must never reveal a project the writer
cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtimes.accounts.access import MANAGED_PROJECT
from runtimes.apimachinery import errors, fielderrors
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import GROUP, Obj
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import CompileResult, compile_job
from runtimes.registry.resources import REGISTRY, resource_key
from runtimes.storage import store

RUNTIMES = resource_key("trainingruntimes", GROUP)  # the registry's key for the kind


def runtime_key(job: Obj) -> tuple[str, str] | None:
    """(namespace, name) of the runtime a job names, or None when it names none."""
    spec = job.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return None
    namespace = ref.get("namespace") or job.get("metadata", {}).get("namespace") or ""
    return (str(namespace), ref["name"])


def reference_errors(job: Obj) -> list[FieldError]:
    key = runtime_key(job)
    own = job.get("metadata", {}).get("namespace")
    if key is None or key[0] in (own, MANAGED_PROJECT):
        return []
    return [
        fielderrors.invalid(
            "spec.runtimeRef.namespace",
            key[0],
            f"a job compiles against a runtime of its own project ({own}) or of the managed "
            f"project {MANAGED_PROJECT}",
        )
    ]


def read_runtime(job: Obj) -> Obj | None:
    """The runtime the job names, or None when it does not exist (or may not be named)."""
    key = runtime_key(job)
    if key is None or reference_errors(job):
        return None
    try:
        return store.get(REGISTRY[RUNTIMES], key[0], key[1])
    except errors.ApiError as exc:
        if exc.reason == "NotFound":
            return None
        raise


def compile_spec(
    runtime: Mapping[str, Any], spec: Mapping[str, Any]
) -> CompileResult | list[FieldError]:
    """The job's spec compiled against ``runtime``; errors with their ``spec.`` paths."""
    outcome = compile_job(runtime, spec, catalog())
    if isinstance(outcome, list):
        return [in_spec(e) for e in outcome]
    return outcome


def in_spec(error: FieldError) -> FieldError:
    field = f"spec.{error.field}" if error.field else "spec"
    return FieldError(field, error.reason, error.message, error.fix)


def compile_errors(job: Obj) -> list[FieldError]:
    """Every reason the job would not compile against its runtime (none when it would)."""
    problems = reference_errors(job)
    if problems:
        return problems
    key = runtime_key(job)
    if key is None:
        return []  # the structural check reported spec.runtimeRef.name
    runtime = read_runtime(job)
    if runtime is None:
        found = fielderrors.not_found("spec.runtimeRef.name", key[1])
        detail = f"no TrainingRuntime of that name in project {key[0]}"
        return [FieldError(found.field, found.reason, f"{found.message}: {detail}")]
    outcome = compile_spec(runtime, job["spec"])
    return outcome if isinstance(outcome, list) else []


def compile_warnings(job: Obj) -> list[str]:
    runtime = read_runtime(job)
    if runtime is None:
        return []
    outcome = compile_spec(runtime, job.get("spec") or {})
    return [] if isinstance(outcome, list) else list(outcome.warnings)
