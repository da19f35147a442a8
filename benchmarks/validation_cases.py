"""Validation of the largest seeded runtime and of a 64 KiB parameters schema.

Baseline: an orjson round trip (dumps + loads) of the same spec, the least any write does with
it; the ratio says how many serialisations one validation costs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.harness import Bench, Comparison, case, repeat

DATA = Path(__file__).resolve().parent.parent / "runtimes" / "data"


def largest_seeded_spec() -> tuple[str, dict[str, Any]]:
    from runtimes.registry.seeding import load_manifests

    manifests = [
        m
        for source in ("managed-catalog.yaml", "examples.yaml")
        if (DATA / source).exists()
        for m in load_manifests(DATA / source)
        if m.get("kind") == "TrainingRuntime"
    ]
    biggest = max(manifests, key=lambda m: len(orjson.dumps(m.get("spec", {}))))
    return biggest["metadata"]["name"], biggest["spec"]


def with_big_parameters(spec: dict[str, Any], limit: int) -> dict[str, Any]:
    """The spec with a parameters schema just under `limit` bytes: many typed, bounded fields."""
    big = copy.deepcopy(spec)
    properties: dict[str, Any] = {}
    schema = {"type": "object", "properties": properties}
    i = 0
    while True:
        properties[f"knob_{i:04d}"] = {
            "type": "number",
            "minimum": 0,
            "maximum": 1000,
            "default": i % 1000,
            "description": "A tunable of the trainer, documented as a real schema would be.",
        }
        if len(orjson.dumps(schema)) > limit:
            del properties[f"knob_{i:04d}"]
            break
        i += 1
    big["parameters"] = schema
    big.get("defaults", {}).pop("parameters", None)
    return big


def _round_trip(spec: dict[str, Any]) -> object:
    return orjson.loads(orjson.dumps(spec))


@case("validation")
def validation(bench: Bench) -> Iterable[Comparison]:
    from runtimes.catalog.accelerators import catalog
    from runtimes.registry.trainingruntime.parameter_schema import PARAMETERS_MAX_BYTES
    from runtimes.registry.trainingruntime.validation import validate_spec

    accelerators = catalog()
    name, spec = largest_seeded_spec()
    n = bench.repeat
    errors = validate_spec(spec, accelerators)
    yield Comparison(
        repeat("validate_spec, largest seeded", n, lambda _i: validate_spec(spec, accelerators)),
        repeat("orjson round trip of it", n, lambda _i: _round_trip(spec)),
        note=f"{name}: {len(orjson.dumps(spec))} bytes of spec, {len(errors)} error(s)",
    )
    big = with_big_parameters(spec, PARAMETERS_MAX_BYTES - 64)
    big_errors = validate_spec(big, accelerators)
    size = len(orjson.dumps(big["parameters"]))
    yield Comparison(
        repeat("validate_spec, 64 KiB schema", n, lambda _i: validate_spec(big, accelerators)),
        repeat("orjson round trip of it", n, lambda _i: _round_trip(big)),
        note=f"parameters schema of {size} bytes, {len(big_errors)} error(s)",
    )
