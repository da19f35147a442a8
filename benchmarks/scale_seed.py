"""Seeds a database with many realistic TrainingRuntimes for the scale benchmark (a subprocess).

    DATABASE_URL=... .venv/bin/python -m benchmarks.scale_seed 10000 scale

Migrates, makes the admin, the project and a bearer token, then writes COUNT runtimes shaped
like the managed catalog's. Each catalog shape goes through the store once (a dry-run create:
defaulting, validation, derived status), then is cloned with its own name, labels, uid and
revision and inserted in bulk beside one ADDED event each, the rows the store itself would have
written: the fast path, because 10,000 validated creates would take longer than the benchmark.
Parameter schemas and presets are trimmed so an object is about 4 KB, the size the targets
assume (the catalog's own runtimes are 3-13 KB). Prints one JSON line: the token, what was
written.
"""

from __future__ import annotations

import copy
import datetime
import sys
import time
import uuid
from typing import Any

import orjson

from runtimes.apimachinery.meta import Obj

TARGET_BYTES = 4096
BATCH = 1_000
TEAMS = ("alignment", "pretraining", "evals", "platform", "research", "applied")
TIERS = ("gold", "silver", "bronze")


def _unreferenced_defs(schema: Obj) -> list[str]:
    defs = schema.get("$defs", {})
    rest = orjson.dumps({k: v for k, v in schema.items() if k != "$defs"})
    used = {k for k in defs if f"#/$defs/{k}".encode() in rest}
    # Definitions used only by other definitions count as used too.
    for _ in range(len(defs)):
        text = orjson.dumps({k: defs[k] for k in used})
        used |= {k for k in defs if f"#/$defs/{k}".encode() in text}
    return [k for k in defs if k not in used]


def _trimmed(manifest: Obj) -> Obj:
    """The manifest cut down to about TARGET_BYTES: fewer parameters, presets and definitions."""
    body = copy.deepcopy(manifest)
    spec = body["spec"]
    spec["presets"] = spec.get("presets", [])[:2]
    schema = spec.get("parameters", {})
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    while len(orjson.dumps(body)) > TARGET_BYTES - 250:
        optional = [p for p in properties if p not in required]
        if not optional:
            break
        victim = optional[-1]
        del properties[victim]
        for unused in _unreferenced_defs(schema):
            del schema["$defs"][unused]
        # Presets and defaults may name the parameter that went: drop those values too.
        for preset in spec.get("presets", []):
            preset.get("parameters", {}).pop(victim, None)
        spec.get("defaults", {}).get("parameters", {}).pop(victim, None)
    return body


def shapes(namespace: str) -> list[Obj]:
    """The managed catalog's runtimes, prepared by the store as a create would prepare them."""
    from runtimes.registry import seeding
    from runtimes.registry.kinds import lookup
    from runtimes.storage import store

    rt = lookup("trainingruntimes")
    assert rt is not None
    prepared = []
    for manifest in seeding.load_manifests(seeding.MANAGED_CATALOG):
        if manifest.get("kind") != "TrainingRuntime":
            continue
        manifest["metadata"].pop("namespace", None)
        result = store.create(rt, namespace, _trimmed(manifest), dry_run=True)
        prepared.append(result.object)
    return prepared


def clone(shape: Obj, i: int, revision: int, when: str) -> Obj:
    obj = copy.deepcopy(shape)
    meta = obj["metadata"]
    meta["name"] = f"{meta['name']}-{i:05d}"
    meta["labels"] = {
        **meta.get("labels", {}),
        "nodus.dev/team": TEAMS[i % len(TEAMS)],
        "nodus.dev/tier": TIERS[i % len(TIERS)],
        "nodus.dev/batch": f"b{i // 500:02d}",
    }
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = when
    meta["resourceVersion"] = str(revision)
    return obj


def seed(count: int, namespace: str) -> dict[str, Any]:
    from django.db import transaction

    from runtimes.registry.kinds import lookup
    from runtimes.storage.models import Event, RevisionCounter, StoredObject

    rt = lookup("trainingruntimes")
    assert rt is not None
    prepared = shapes(namespace)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    total_bytes = 0
    with transaction.atomic():
        counter = RevisionCounter.objects.select_for_update().get(pk=1)
        revision = counter.value
        for start in range(0, count, BATCH):
            objects, events = [], []
            for i in range(start, min(start + BATCH, count)):
                revision += 1
                obj = clone(prepared[i % len(prepared)], i, revision, when)
                body = orjson.dumps(obj).decode()
                total_bytes += len(body)
                key = {"resource": rt.key, "namespace": namespace, "name": obj["metadata"]["name"]}
                objects.append(
                    StoredObject(**key, uid=obj["metadata"]["uid"], revision=revision, body=body)
                )
                events.append(Event(**key, revision=revision, type="ADDED", body=body))
            StoredObject.objects.bulk_create(objects)
            Event.objects.bulk_create(events)
        counter.value = revision
        counter.save(update_fields=["value"])
    return {"count": count, "mean_bytes": total_bytes // max(count, 1), "revision": revision}


def main(count: int, namespace: str) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    from runtimes.accounts.bootstrap import ensure_admin
    from runtimes.accounts.tokens import create_token
    from runtimes.registry import seeding
    from runtimes.storage.models import Membership, Project, Role

    began = time.monotonic()
    call_command("migrate", interactive=False, verbosity=0)
    admin, _password, _generated = ensure_admin()
    project, _ = Project.objects.get_or_create(name=namespace)
    Membership.objects.get_or_create(
        project=project, user_id=admin.pk, defaults={"role": Role.ADMIN}
    )
    seeding.seed_accelerators()  # validation reads the accelerator catalog
    token = create_token(admin, "scale-bench")[1]
    result = seed(count, namespace)
    result.update(token=token, namespace=namespace, seconds=round(time.monotonic() - began, 1))
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
