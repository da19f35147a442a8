"""The accelerator catalog: the shipped data file, validation of admin edits, objects, table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from runtimes.apimachinery.quantities import parse_quantity
from runtimes.catalog import accelerators
from runtimes.catalog.accelerators import (
    AcceleratorCatalogError,
    accelerator_objects,
    parse_catalog,
)
from tests.support.catalogs import small_catalog_data

SHIPPED_IDS = {
    "h100-80g-sxm",
    "h100-80g-pcie",
    "h100-94g-nvl",
    "h200-141g-sxm",
    "b200-180g-sxm",
    "a100-40g-sxm",
    "a100-80g-sxm",
    "a100-80g-pcie",
    "l40s-48g-pcie",
    "l4-24g-pcie",
    "rtx-4090-24g",
    "mi300x-192g-oam",
}


@pytest.fixture
def restore_catalog(monkeypatch: pytest.MonkeyPatch):
    yield monkeypatch
    monkeypatch.undo()
    accelerators.reload()


def test_it_ships_every_family_and_variant() -> None:
    cat = accelerators.catalog()
    assert set(cat.ids) == SHIPPED_IDS
    assert list(cat.families) == [
        "H100", "H200", "B200", "A100", "L40S", "L4", "RTX 4090", "MI300X",
    ]  # fmt: skip
    assert set(cat.classes) == {
        "h100-80g", "h100-94g", "h200-141g", "b200-180g", "a100-40g", "a100-80g",
        "l40s-48g", "l4-24g", "rtx-4090", "mi300x-192g",
    }  # fmt: skip
    assert cat.variant("h100-94g-nvl").memory == "94Gi"
    assert cat.family_of("a100-80g-pcie").name == "A100"
    assert cat.family_of("A100").variants == ("a100-40g-sxm", "a100-80g-sxm", "a100-80g-pcie")
    assert cat.family_of("TPUv5") is None
    assert cat.variant("h100") is None


def test_it_treats_infinity_fabric_as_not_nvlink() -> None:
    mi300x = accelerators.catalog().variant("mi300x-192g-oam")
    assert mi300x.vendor == "AMD"
    assert mi300x.interconnect == "InfinityFabric"
    assert mi300x.nvlink is False


def test_it_sells_only_realistic_gpu_counts_with_positive_prices() -> None:
    cat = accelerators.catalog()
    for offering in cat.offerings:
        assert offering.count in (1, 2, 4, 8)
        assert offering.price_per_hour > 0
        assert parse_quantity(offering.memory) > 0
    for variant in cat.variants.values():
        counts = [o.count for o in variant.offerings]
        assert len(counts) == len(set(counts))


def test_it_reports_every_problem_in_an_admin_edit_with_its_path() -> None:
    data = small_catalog_data()
    variant = data["families"][0]["variants"][0]
    variant["memory"] = "eighty"
    variant["interconnect"] = "PCIe"  # contradicts nvlink: true
    variant["offerings"][1]["count"] = 3
    variant["offerings"][0]["pricePerHour"] = 0
    data["families"].append({"name": "H100", "vendor": "NVIDIA", "variants": []})
    with pytest.raises(AcceleratorCatalogError) as caught:
        parse_catalog(data, "admin.yaml")
    problems = caught.value.problems
    base = "families[0].variants[0]"
    assert f"{base}.memory: must be a positive Kubernetes quantity, got 'eighty'" in problems
    assert f"{base}.interconnect: PCIe contradicts nvlink: True" in problems
    assert f"{base}.offerings[1].count: must be 1, 2, 4 or 8, got 3" in problems
    assert f"{base}.offerings[0].pricePerHour: must be a positive number of USD, got 0" in problems
    assert "families[1].name: duplicate name 'H100'" in problems
    assert "families[1].variants: must be a non-empty list" in problems
    assert "admin.yaml" in str(caught.value)


def test_it_rejects_duplicate_variant_ids_and_counts() -> None:
    data = small_catalog_data()
    variant = data["families"][0]["variants"][0]
    variant["offerings"].append(dict(variant["offerings"][0]))
    data["families"][0]["variants"].append(dict(variant))
    with pytest.raises(AcceleratorCatalogError) as caught:
        parse_catalog(data)
    assert "families[0].variants[0].offerings[2].count: duplicate count 1" in caught.value.problems
    assert "families[0].variants[1].id: duplicate id 'h100-80g-sxm'" in caught.value.problems


def test_it_reads_the_file_named_by_the_environment(
    tmp_path: Path, restore_catalog: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "accelerators.yaml"
    path.write_text(yaml.safe_dump(small_catalog_data()))
    restore_catalog.setenv("NODUS_ACCELERATORS_FILE", str(path))
    assert accelerators.reload().ids == ("h100-80g-sxm",)
    # Cached until the next reload, even when the file changes underneath.
    data = small_catalog_data()
    data["families"][0]["variants"][0]["id"] = "h100-80g-sxm5"
    path.write_text(yaml.safe_dump(data))
    assert accelerators.catalog().ids == ("h100-80g-sxm",)
    assert accelerators.reload().ids == ("h100-80g-sxm5",)


def test_it_names_the_unreadable_file(tmp_path: Path, restore_catalog: pytest.MonkeyPatch) -> None:
    restore_catalog.setenv("NODUS_ACCELERATORS_FILE", str(tmp_path / "missing.yaml"))
    with pytest.raises(AcceleratorCatalogError, match=r"missing\.yaml"):
        accelerators.reload()


def test_it_presents_each_variant_as_a_cluster_scoped_accelerator() -> None:
    cat = parse_catalog(small_catalog_data())
    [obj] = accelerator_objects(cat)
    assert obj["apiVersion"] == "nodus.dev/v1beta1"
    assert obj["kind"] == "Accelerator"
    assert obj["metadata"]["name"] == "h100-80g-sxm"
    assert "namespace" not in obj["metadata"]
    assert obj["spec"] == {
        "family": "H100",
        "vendor": "NVIDIA",
        "memory": "80Gi",
        "nvlink": True,
        "interconnect": "NVLink",
        "acceleratorClass": "h100-80g",
        "offerings": [
            {"count": 1, "cpu": "26", "memory": "225Gi", "disk": "1Ti", "pricePerHour": 3.0},
            {"count": 8, "cpu": "208", "memory": "1800Gi", "disk": "8Ti", "pricePerHour": 24.0},
        ],
    }


def test_it_keeps_label_values_valid_for_families_with_spaces() -> None:
    objs = {o["metadata"]["name"]: o for o in accelerator_objects()}
    assert objs["rtx-4090-24g"]["spec"]["family"] == "RTX 4090"
    assert objs["rtx-4090-24g"]["metadata"]["labels"]["nodus.dev/family"] == "rtx-4090"
    assert len(objs) == 12
