"""One reconcile of one TrainingJob: compile it against a Ready runtime, once, and pin the result.

Level-triggered: the status a job should have is worked out from the job and its runtime as they
are now (`desired_status`), and written through the status subresource when it differs.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from runtimes.accounts.serviceaccounts import ServiceAccount
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.objectmeta import now_timestamp
from runtimes.registry import authorization
from runtimes.registry.kinds import lookup
from runtimes.registry.resources import ResourceType
from runtimes.registry.trainingjob.admission import compile_spec, runtime_key
from runtimes.registry.trainingjob.schema import RECOMPILE_ANNOTATION
from runtimes.registry.trainingjob.strategy import recompile_request
from runtimes.storage import store

# - A job whose spec (generation) or recompile request (the ``nodus.dev/recompile`` annotation)
#   has not been compiled yet waits, ``Pending`` with ``RuntimeReady=False``, until its runtime is
#   Ready at its current generation, then compiles: ``Compiled`` with ``status.compiled``, the
#   pinned ``runtimeGeneration``, ``imageDigest`` and a per-field fingerprint of the runtime spec;
#   or ``Invalid`` with a ``Compiled=False`` condition naming every cause.
# - Once compiled, a job is never recompiled because its runtime moved on. It gets a
#   ``RuntimeChanged=True`` condition that names the runtime fields (or the image digest) that
#   changed, and keeps its compile until its spec changes or its owner asks for a recompile.
# - A job whose runtime is deleted gets ``RuntimeReady=False`` with reason ``RuntimeMissing``.
#
# Runtimes are read through a lookup the caller gives (the runtime controller's informer cache in
# the loop, the store in a one-shot pass), so this module never lists runtimes itself. Status is
# written as the controller's service account, checked as the API checks a PATCH of ``/status``.

log = logging.getLogger("nodus.controller")

KIND = "trainingjobs"
COMPILED, RUNTIME_READY, RUNTIME_CHANGED = "Compiled", "RuntimeReady", "RuntimeChanged"
RUNTIME_MISSING = "RuntimeMissing"
MAX_MESSAGE = 4096
# status.compiled keeps the fastest offerings only: a status is read on every list.
MAX_OFFERINGS = 10
WRITE_STATUS = authorization.role("patch", subresource="status")

RuntimeLookup = Callable[[str, str], Obj | None]


def job_type() -> ResourceType:
    rt = lookup(KIND)
    assert rt is not None, "the TrainingJob kind is not registered"
    return rt


def fingerprint(runtime: Mapping[str, Any]) -> dict[str, str]:
    """A short hash of each top-level field of the runtime's spec, and of its image digest."""
    spec = runtime.get("spec") or {}
    prints = {
        key: hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]
        for key, value in spec.items()
    }
    digest = (runtime.get("status") or {}).get("imageDigest")
    if digest:
        prints["status.imageDigest"] = str(digest)[-12:]
    return prints


def is_ready(runtime: Mapping[str, Any]) -> bool:
    status = runtime.get("status") or {}
    generation = (runtime.get("metadata") or {}).get("generation")
    return status.get("phase") == "Ready" and status.get("observedGeneration") == generation


def desired_status(job: Obj, runtime: Obj | None, now: str) -> Obj:
    """The status ``job`` should have, given its ``runtime`` (None: it does not exist)."""
    old = job.get("status") if isinstance(job.get("status"), dict) else {}
    assert isinstance(old, dict)
    status = copy.deepcopy(old)
    generation = job["metadata"].get("generation")
    request = recompile_request(job)
    done = (
        old.get("observedGeneration") == generation
        and (old.get("recompileRequest") or "") == request
        and old.get("phase") in ("Compiled", "Invalid")
    )
    conditions = _Conditions(status, generation, now)
    key = runtime_key(job) or ("", "")
    where = f"{key[0]}/{key[1]}"
    if runtime is None:
        conditions.set(RUNTIME_READY, "False", RUNTIME_MISSING, f"runtime {where} does not exist")
        if not done:
            _pending(status, generation, request)
        return conditions.done()
    if done:
        _runtime_ready(conditions, runtime, where, compiled=True)
        _runtime_changed(conditions, status, runtime, where)
        return conditions.done()
    if not is_ready(runtime):
        _runtime_ready(conditions, runtime, where)
        _pending(status, generation, request)
        return conditions.done()
    outcome = compile_spec(runtime, job.get("spec") or {})
    status.update(observedGeneration=generation, recompileRequest=request)
    if not request:
        status.pop("recompileRequest")
    conditions.set(RUNTIME_READY, "True", "RuntimeReady", f"runtime {where} is Ready")
    if isinstance(outcome, list):
        status["phase"] = "Invalid"
        for key_ in ("compiled", "runtimeGeneration", "imageDigest", "runtimeFingerprint"):
            status.pop(key_, None)
        causes = "; ".join(str(e) for e in outcome)
        conditions.set(COMPILED, "False", "CompileFailed", _clip(f"does not compile: {causes}"))
        conditions.drop(RUNTIME_CHANGED)
        return conditions.done()
    status["phase"] = "Compiled"
    status["compiled"] = _compiled(outcome.as_dict())
    status["runtimeGeneration"] = runtime["metadata"].get("generation")
    digest = (runtime.get("status") or {}).get("imageDigest")
    if digest:
        status["imageDigest"] = digest
    else:
        status.pop("imageDigest", None)
    status["runtimeFingerprint"] = fingerprint(runtime)
    generation_of = status["runtimeGeneration"]
    conditions.set(
        COMPILED, "True", "Compiled", f"compiled against {where} generation {generation_of}"
    )
    conditions.set(RUNTIME_CHANGED, "False", "RuntimeUnchanged", "compiled against it as it is")
    return conditions.done()


def _pending(status: Obj, generation: Any, request: str) -> None:
    status["phase"] = "Pending"
    status["observedGeneration"] = generation
    if request:
        status["recompileRequest"] = request
    else:
        status.pop("recompileRequest", None)
    for key in ("compiled", "runtimeGeneration", "imageDigest", "runtimeFingerprint"):
        status.pop(key, None)


def _runtime_ready(
    conditions: _Conditions, runtime: Obj, where: str, *, compiled: bool = False
) -> None:
    if is_ready(runtime):
        conditions.set(RUNTIME_READY, "True", "RuntimeReady", f"runtime {where} is Ready")
        return
    phase = (runtime.get("status") or {}).get("phase") or "Pending"
    then = "the job keeps its compile" if compiled else "the job compiles once it is Ready"
    message = f"runtime {where} is {phase}; {then}"
    conditions.set(RUNTIME_READY, "False", "RuntimeNotReady", message)


def _runtime_changed(conditions: _Conditions, status: Obj, runtime: Obj, where: str) -> None:
    if status.get("phase") != "Compiled":
        return
    pinned = status.get("runtimeFingerprint") or {}
    now = fingerprint(runtime)
    moved = sorted(k for k in set(pinned) | set(now) if pinned.get(k) != now.get(k))
    if not moved:
        conditions.set(RUNTIME_CHANGED, "False", "RuntimeUnchanged", "compiled against it as it is")
        return
    fields = ", ".join(k if k.startswith("status.") else f"spec.{k}" for k in moved)
    message = (
        f"runtime {where} is at generation {runtime['metadata'].get('generation')}, the job was "
        f"compiled against generation {status.get('runtimeGeneration')} ({fields} changed); the "
        f"compile is kept: change the job, or set the {RECOMPILE_ANNOTATION} annotation, to "
        "compile against the runtime as it is now"
    )
    conditions.set(RUNTIME_CHANGED, "True", "RuntimeChanged", _clip(message))


def _compiled(result: dict[str, Any]) -> dict[str, Any]:
    offerings = result.get("offerings") or []
    compiled = {
        key: result[key]
        for key in (
            "mode",
            "preset",
            "parameters",
            "provenance",
            "resources",
            "nodes",
            "sidecars",
            "initCommand",
            "work",
        )
        if result.get(key) is not None
    }
    compiled["offerings"] = offerings[:MAX_OFFERINGS]
    if offerings:
        first = offerings[0]
        compiled["accelerator"] = first["accelerator"]
        for key in ("seconds", "cost"):
            if first.get(key) is not None:
                compiled[key] = first[key]
    if result.get("warnings"):
        compiled["warnings"] = result["warnings"]
    return compiled


class _Conditions:
    """metav1.Conditions of one status: lastTransitionTime moves only when status does."""

    def __init__(self, status: Obj, generation: Any, now: str) -> None:
        self.status = status
        self.generation = generation
        self.now = now
        self.items = [c for c in status.get("conditions") or [] if isinstance(c, dict)]

    def set(self, kind: str, value: str, reason: str, message: str) -> None:
        previous = next((c for c in self.items if c.get("type") == kind), None)
        since = self.now
        if previous is not None and previous.get("status") == value:
            since = previous.get("lastTransitionTime") or self.now
        condition = {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "observedGeneration": self.generation,
            "lastTransitionTime": since,
        }
        if previous is None:
            self.items.append(condition)
        else:
            self.items = [condition if c is previous else c for c in self.items]

    def drop(self, kind: str) -> None:
        self.items = [c for c in self.items if c.get("type") != kind]

    def done(self) -> Obj:
        self.status["conditions"] = self.items
        return self.status


def _clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


@dataclass(frozen=True)
class JobOutcome:
    phase: str | None  # None when the job is gone
    written: bool = False


class JobReconciler:
    """Reconciles jobs by key, reading their runtimes through ``runtimes``."""

    def __init__(
        self,
        runtimes: RuntimeLookup,
        clock: Callable[[], str] = now_timestamp,
        account: ServiceAccount | None = None,
    ) -> None:
        self.runtimes = runtimes
        self.clock = clock
        self.account = account or ServiceAccount()

    def reconcile(self, namespace: str, name: str) -> JobOutcome:
        rt = job_type()
        try:
            job = store.get(rt, namespace, name)
        except errors.ApiError as exc:
            if exc.reason != "NotFound":
                raise
            return JobOutcome(None)
        key = runtime_key(job)
        runtime = self.runtimes(*key) if key is not None else None
        wanted = desired_status(job, runtime, self.clock())
        if wanted == job.get("status"):
            return JobOutcome(wanted.get("phase"))

        def change(current: Obj) -> Obj:
            current["status"] = desired_status(current, runtime, self.clock())
            return current

        authorization.check(self.account.user(), WRITE_STATUS, "PATCH", namespace, name, rt)
        try:
            result = store.mutate(rt, namespace, name, change, subresource="status")
        except errors.ApiError as exc:
            if exc.reason != "NotFound":
                raise
            return JobOutcome(None)
        phase = (result.object.get("status") or {}).get("phase")
        if result.changed:
            log.info("trainingjob %s/%s: %s", namespace, name, phase)
        return JobOutcome(phase, written=result.changed)
