"""Which accelerator classes a gpu.type entry reaches, with a stub and the real catalog."""

from __future__ import annotations

import pytest

from runtimes.catalog.accelerators import catalog
from runtimes.catalog.gpu_rules import classes_for, gpu_requests, variant_class, variant_family
from tests.invalid_manifests import base, stub_catalog

CATALOGS = [pytest.param(stub_catalog(), id="stub"), pytest.param(catalog(), id="real")]


@pytest.mark.parametrize("source", CATALOGS)
@pytest.mark.parametrize(
    ("entry", "exact", "classes"),
    [
        ("H100", False, {"h100-80g", "h100-94g"}),
        ("L4", False, {"l4-24g"}),
        ("L40S", False, {"l40s-48g"}),
        ("RTX 4090", False, {"rtx-4090"}),
        ("A100", False, {"a100-40g", "a100-80g"}),
        ("h100-80g-pcie", False, {"h100-80g", "h100-94g"}),
        ("h100-80g-pcie", True, {"h100-80g"}),
        ("a100-80g-sxm", True, {"a100-80g"}),
        ("mi300x-192g-oam", True, {"mi300x-192g"}),
        ("V100", False, set()),
    ],
)
def test_it_maps_entries_to_classes(
    source: object, entry: str, exact: bool, classes: set[str]
) -> None:
    assert classes_for(entry, source, exact) == classes  # type: ignore[arg-type]


@pytest.mark.parametrize("source", CATALOGS)
def test_it_finds_family_and_class_of_every_variant(source: object) -> None:
    for variant_id in source.ids:  # type: ignore[attr-defined]
        assert variant_family(variant_id, source) in source.families  # type: ignore[arg-type, attr-defined]
        assert variant_class(variant_id, source) in source.classes  # type: ignore[arg-type, attr-defined]


def test_it_finds_every_gpu_request_in_a_spec() -> None:
    paths = [path for path, _ in gpu_requests(base()["spec"])]
    assert paths == [
        "spec.defaults.resources.gpu",
        "spec.presets[0].resources.gpu",
        "spec.presets[1].resources.gpu",
        "spec.presets[2].resources.gpu",
    ]
    assert list(gpu_requests({"presets": [1, {"resources": []}], "defaults": "x"})) == []
