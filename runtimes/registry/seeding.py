"""Loads catalogs into the store idempotently: a second run changes nothing and emits no event.

Objects go through the store and their kind's strategy like any API write, so a seed file that
breaks a rule fails loudly instead of storing an invalid object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtimes.apimachinery import errors, yamlcodec
from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import accelerator_objects
from runtimes.registry import fieldmanager
from runtimes.registry.kinds import lookup
from runtimes.registry.resources import ResourceType
from runtimes.storage import store

DATA = Path(__file__).resolve().parents[1] / "data"
MANAGED_CATALOG = DATA / "managed-catalog.yaml"
EXAMPLES = DATA / "examples.yaml"
_DESIRED_META = ("labels", "annotations")


def load_manifests(path: Path) -> list[Obj]:
    return [doc for doc in yamlcodec.load_all(path.read_text()) if doc]


def upsert(rt: ResourceType, manifest: Obj) -> str:
    """Creates the object, or brings its spec, labels and annotations in line; says which."""
    meta = manifest["metadata"]
    namespace = meta.get("namespace")
    try:
        store.get(rt, namespace, meta["name"])
    except errors.ApiError as exc:
        if exc.reason != "NotFound":
            raise
        store.create(
            rt,
            namespace,
            manifest,
            field_validation="Strict",
            on_prepared=fieldmanager.recorder(rt, fieldmanager.SEED, ""),
        )
        return "created"

    def change(obj: Obj) -> Obj:
        for key in _DESIRED_META:
            if key in meta:
                obj["metadata"][key] = meta[key]
            else:
                obj["metadata"].pop(key, None)
        obj["spec"] = manifest.get("spec")
        return obj

    result = store.mutate(
        rt,
        namespace,
        meta["name"],
        change,
        field_validation="Strict",
        on_prepared=fieldmanager.recorder(rt, fieldmanager.SEED, ""),
    )
    return "updated" if result.changed else "unchanged"


def seed_accelerators() -> dict[str, int]:
    rt = lookup("accelerators")
    assert rt is not None
    counts: dict[str, int] = {}
    for obj in accelerator_objects():
        outcome = upsert(rt, obj)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def seed_manifests(path: Path, image_for: Any = None) -> dict[str, int]:
    """Upserts every TrainingRuntime in `path`; `image_for(manifest)` may rewrite spec.image."""
    rt = lookup("trainingruntimes")
    assert rt is not None
    counts: dict[str, int] = {}
    for manifest in load_manifests(path):
        if image_for is not None:
            manifest["spec"]["image"] = image_for(manifest)
        outcome = upsert(rt, manifest)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
