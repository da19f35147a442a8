"""Fixtures shared by the console's view tests: runtimes in `demo` and the managed catalog."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from runtimes import store
from runtimes.kinds import TRAINING_RUNTIMES
from runtimes.models import Project
from runtimes.seeding import MANAGED_CATALOG, load_manifests
from tests.conftest import runtime_manifest

Obj = dict[str, Any]


def put_runtime(namespace: str, manifest: Obj, phase: str | None = None) -> Obj:
    """Creates a runtime and, like the controller would, sets its phase through /status."""
    obj = store.create(TRAINING_RUNTIMES, namespace, manifest).object
    if phase is None:
        return obj

    def change(current: Obj) -> Obj:
        generation = current["metadata"]["generation"]
        status = {**current.get("status", {}), "phase": phase, "observedGeneration": generation}
        current["status"] = status
        return current

    name = obj["metadata"]["name"]
    return store.mutate(TRAINING_RUNTIMES, namespace, name, change, subresource="status").object


def managed_catalog() -> list[Obj]:
    return [copy.deepcopy(m) for m in load_manifests(MANAGED_CATALOG)]


@pytest.fixture
def catalog_data(actors: dict[str, Any]) -> dict[str, Any]:
    """alice's demo project holds two runtimes; the managed project holds the whole catalog."""
    Project.objects.get_or_create(name="nodus")
    Project.objects.get_or_create(name="secret")
    for manifest in managed_catalog():
        put_runtime("nodus", manifest, phase="Ready")
    sft = runtime_manifest(
        "sft-demo",
        defaults={"resources": {"gpu": {"type": ["H100"], "count": 1}}},
        estimate={"secondsPerStep": {"h100-80g": 0.5}},
        presets=[
            {
                "model": "Qwen/Qwen3-0.6B",
                "method": "LoRA",
                "resources": {"gpu": {"type": ["H100"], "count": 1}},
            }
        ],
    )
    put_runtime("demo", sft, phase="Ready")
    put_runtime("demo", runtime_manifest("eval-demo", task="Evaluate", modes=["Evaluate"]))
    put_runtime("secret", runtime_manifest("hidden-runtime"))
    return actors


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client
