"""The job controller: compile once against a Ready runtime, pin it, never recompile silently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtimes.apimachinery.meta import Obj
from runtimes.controller.jobs import JobReconciler, job_type
from runtimes.controller.loop import Controller
from runtimes.controller.reconcile import runtime_type
from runtimes.storage import store
from runtimes.storage.models import Project
from runtimes.watch import hub
from tests.invalid_manifests import base
from tests.support.controller import (
    LAYOUT_REGISTRY,
    World,
    make_world,
    publish,
    retrying,
    running,
    wait_for,
)

JOB: dict[str, Any] = {
    "apiVersion": "nodus.dev/v1beta1",
    "kind": "TrainingJob",
    "metadata": {"name": "tune"},
    "spec": {
        "runtimeRef": {"name": "sft-trl"},
        "model": "Qwen/Qwen3-0.6B",
        "method": "LoRA",
        "data": "hf://datasets/nodus/alpaca",
        "parameters": {"epochs": 2, "batchSize": 16},
        "steps": 1000,
    },
}
DIGEST = "sha256:" + "12" * 32


def add_runtime(**spec: Any) -> Obj:
    manifest = base()
    manifest["metadata"] = {"name": "sft-trl", "namespace": "demo"}
    manifest["spec"].update(spec)
    return store.create(runtime_type(), "demo", manifest).object


def change_runtime(**spec: Any) -> Obj:
    def change(obj: Obj) -> Obj:
        obj["spec"].update(spec)
        return obj

    return store.mutate(runtime_type(), "demo", "sft-trl", change).object


def set_runtime_phase(phase: str) -> Obj:
    """What the runtime controller writes: a phase about the current generation."""

    def change(obj: Obj) -> Obj:
        obj["status"] = {
            **obj.get("status", {}),
            "phase": phase,
            "observedGeneration": obj["metadata"]["generation"],
            "imageDigest": DIGEST,
        }
        return obj

    return store.mutate(runtime_type(), "demo", "sft-trl", change, subresource="status").object


def add_job(**metadata: Any) -> Obj:
    body = {**JOB, "metadata": {**JOB["metadata"], **metadata}}
    return store.create(job_type(), "demo", body).object


def the_job() -> Obj:
    return store.get(job_type(), "demo", "tune")


def condition(job: Obj, kind: str) -> dict[str, Any]:
    [found] = [c for c in job["status"]["conditions"] if c["type"] == kind]
    return found


@pytest.fixture
def reconciler(db: Any) -> JobReconciler:
    Project.objects.get_or_create(name="demo")

    def lookup(namespace: str, name: str) -> Obj | None:
        try:
            return store.get(runtime_type(), namespace, name)
        except Exception:
            return None

    return JobReconciler(lookup)


def test_it_compiles_once_the_runtime_is_ready(reconciler: JobReconciler) -> None:
    add_runtime()
    add_job()
    assert reconciler.reconcile("demo", "tune").phase == "Pending"
    job = the_job()
    assert condition(job, "RuntimeReady")["status"] == "False"
    assert condition(job, "RuntimeReady")["reason"] == "RuntimeNotReady"
    assert "compiled" not in job["status"]

    set_runtime_phase("Ready")
    assert reconciler.reconcile("demo", "tune").phase == "Compiled"
    status = the_job()["status"]
    assert status["runtimeGeneration"] == 1
    assert status["imageDigest"] == DIGEST
    compiled = status["compiled"]
    assert compiled["preset"]["method"] == "LoRA"
    assert compiled["parameters"]["batchSize"] == 16
    assert compiled["provenance"]["/batchSize"] == "job"
    assert compiled["provenance"]["/learningRate"] == "default"
    assert compiled["offerings"][0]["accelerator"] == compiled["accelerator"]
    # Scaled as the contract says: batchSize 16 over the default 8 doubles the step time.
    per_step = base()["spec"]["estimate"]["secondsPerStep"]
    first = compiled["offerings"][0]
    assert compiled["seconds"] == pytest.approx(1000 * per_step[first["acceleratorClass"]] * 2)
    assert compiled["cost"] == first["cost"]
    assert condition(the_job(), "Compiled")["status"] == "True"
    # Nothing moved: a second pass writes nothing.
    assert reconciler.reconcile("demo", "tune").written is False


def test_it_keeps_a_compile_when_the_runtime_moves_on(reconciler: JobReconciler) -> None:
    add_runtime()
    change_runtime(outputs=[{"name": "adapter", "path": "/nodus/out/a"}])
    change_runtime(outputs=[{"name": "adapter", "path": "/nodus/out/b"}])
    assert set_runtime_phase("Ready")["metadata"]["generation"] == 3
    add_job()
    reconciler.reconcile("demo", "tune")
    compiled = the_job()["status"]
    assert (compiled["phase"], compiled["runtimeGeneration"]) == ("Compiled", 3)

    defaults = base()["spec"]["defaults"]
    defaults["parameters"]["learningRate"] = 0.001
    change_runtime(defaults=defaults)
    assert set_runtime_phase("Ready")["metadata"]["generation"] == 4
    reconciler.reconcile("demo", "tune")
    job = the_job()
    assert job["status"]["runtimeGeneration"] == 3
    assert job["status"]["compiled"] == compiled["compiled"]  # no silent recompile
    changed = condition(job, "RuntimeChanged")
    assert changed["status"] == "True"
    assert "generation 4" in changed["message"]
    assert "spec.defaults" in changed["message"]

    # Asking for a recompile compiles against generation 4.
    def ask(obj: Obj) -> Obj:
        obj["metadata"]["annotations"] = {"nodus.dev/recompile": "1"}
        return obj

    asked = store.mutate(job_type(), "demo", "tune", ask).object
    assert asked["status"]["phase"] == "Pending"  # until the controller has acted on it
    reconciler.reconcile("demo", "tune")
    job = the_job()
    assert job["status"]["runtimeGeneration"] == 4
    assert job["status"]["compiled"]["parameters"]["learningRate"] == 0.001
    assert job["status"]["recompileRequest"] == "1"
    assert condition(job, "RuntimeChanged")["status"] == "False"


def test_it_recompiles_when_the_job_changes(reconciler: JobReconciler) -> None:
    add_runtime()
    set_runtime_phase("Ready")
    add_job()
    reconciler.reconcile("demo", "tune")

    def change(obj: Obj) -> Obj:
        obj["spec"]["parameters"]["batchSize"] = 32
        return obj

    assert store.mutate(job_type(), "demo", "tune", change).object["status"]["phase"] == "Pending"
    reconciler.reconcile("demo", "tune")
    job = the_job()
    assert job["status"]["observedGeneration"] == 2
    assert job["status"]["compiled"]["parameters"]["batchSize"] == 32


def test_a_job_that_no_longer_compiles_is_invalid(reconciler: JobReconciler) -> None:
    add_runtime()
    add_job()
    # Before the runtime is Ready, it drops the preset the job was admitted on.
    change_runtime(presets=[p for p in base()["spec"]["presets"] if p["method"] != "LoRA"])
    set_runtime_phase("Ready")
    assert reconciler.reconcile("demo", "tune").phase == "Invalid"
    failed = condition(the_job(), "Compiled")
    assert (failed["status"], failed["reason"]) == ("False", "CompileFailed")
    assert "spec.method" in failed["message"]


def test_a_deleted_runtime_leaves_its_jobs_runtime_missing(reconciler: JobReconciler) -> None:
    add_runtime()
    set_runtime_phase("Ready")
    add_job()
    reconciler.reconcile("demo", "tune")
    store.delete(runtime_type(), "demo", "sft-trl")
    reconciler.reconcile("demo", "tune")
    job = the_job()
    missing = condition(job, "RuntimeReady")
    assert (missing["status"], missing["reason"]) == ("False", "RuntimeMissing")
    assert job["status"]["phase"] == "Compiled"  # the pinned compile stays, for the record


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
class TestInTheLoop:
    @pytest.fixture(autouse=True)
    def fresh_hub(self) -> Iterator[None]:
        hub.shutdown()
        yield
        hub.shutdown()

    def test_a_job_compiles_when_its_runtime_turns_ready(self, tmp_path: Path) -> None:
        world: World = make_world(tmp_path)
        image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/sft:1", key=world.key)
        retrying(lambda: add_runtime(image=image))
        retrying(add_job)
        with running(Controller(world.config)):
            wait_for(lambda: retrying(the_job)["status"]["phase"] == "Compiled")
        job = retrying(the_job)
        assert job["status"]["imageDigest"] == image.split("@")[1]
        assert condition(job, "RuntimeReady")["status"] == "True"
