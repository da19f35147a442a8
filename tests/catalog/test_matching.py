"""GPU matching and effective resources against a small, fixed catalog."""

from __future__ import annotations

import pytest

from runtimes.catalog.accelerators import AcceleratorCatalog, parse_catalog
from runtimes.catalog.matching import effective_resources, explain_gpu, match_gpu


def offering(count: int, cpu: str, memory: str, disk: str, price: float) -> dict:
    return {"count": count, "cpu": cpu, "memory": memory, "disk": disk, "pricePerHour": price}


@pytest.fixture(scope="module")
def catalog() -> AcceleratorCatalog:
    return parse_catalog(
        {
            "families": [
                {
                    "name": "H100",
                    "vendor": "NVIDIA",
                    "variants": [
                        {"id": "h100-80g-sxm", "memory": "80Gi", "nvlink": True,
                         "acceleratorClass": "h100-80g",
                         "offerings": [offering(1, "26", "225Gi", "1Ti", 3.0),
                                       offering(8, "208", "1800Gi", "8Ti", 24.0)]},
                        {"id": "h100-80g-pcie", "memory": "80Gi", "nvlink": False,
                         "acceleratorClass": "h100-80g",
                         "offerings": [offering(1, "16", "180Gi", "1Ti", 2.5),
                                       offering(2, "32", "360Gi", "2Ti", 5.0)]},
                        {"id": "h100-94g-nvl", "memory": "94Gi", "nvlink": True,
                         "acceleratorClass": "h100-94g",
                         "offerings": [offering(2, "64", "480Gi", "4Ti", 6.0)]},
                    ],
                },
                {
                    "name": "A100",
                    "vendor": "NVIDIA",
                    "variants": [
                        {"id": "a100-40g-sxm", "memory": "40Gi", "nvlink": True,
                         "acceleratorClass": "a100-40g",
                         "offerings": [offering(1, "12", "85Gi", "512Gi", 1.25)]},
                        {"id": "a100-80g-sxm", "memory": "80Gi", "nvlink": True,
                         "acceleratorClass": "a100-80g",
                         "offerings": [offering(1, "12", "170Gi", "1Ti", 1.75)]},
                    ],
                },
                {
                    "name": "MI300X",
                    "vendor": "AMD",
                    "variants": [
                        {"id": "mi300x-192g-oam", "memory": "192Gi", "nvlink": False,
                         "interconnect": "InfinityFabric", "acceleratorClass": "mi300x-192g",
                         "offerings": [offering(1, "20", "240Gi", "5Ti", 2.5)]},
                    ],
                },
            ]
        }
    )  # fmt: skip


def ids(matches: list) -> list[str]:
    return [m.variant.id for m in matches]


def test_it_matches_every_variant_of_a_family_and_no_other(catalog: AcceleratorCatalog) -> None:
    matches = match_gpu({"type": ["A100"], "count": 1}, catalog)
    assert ids(matches) == ["a100-40g-sxm", "a100-80g-sxm"]
    assert {m.rule for m in matches} == {"Family"}
    assert matches[0].reasons[0].message == "family A100"


def test_it_matches_the_whole_family_of_an_id_unless_exact(catalog: AcceleratorCatalog) -> None:
    loose = match_gpu({"type": ["h100-80g-pcie"], "count": 2}, catalog)
    # h100-80g-sxm sells 1 and 8 GPUs only, so count 2 leaves the PCIe card and the NVL pair.
    assert ids(loose) == ["h100-80g-pcie", "h100-94g-nvl"]
    assert [m.rule for m in loose] == ["Named", "SameFamily"]
    assert loose[1].reasons[0].message == "same family (H100) as h100-80g-pcie"

    pinned = match_gpu({"type": ["h100-80g-pcie"], "count": 2, "exact": True}, catalog)
    assert ids(pinned) == ["h100-80g-pcie"]
    assert pinned[0].rule == "ExactPin"
    assert pinned[0].reasons[0].message == "pinned exactly: h100-80g-pcie"


def test_it_filters_by_memory_floor(catalog: AcceleratorCatalog) -> None:
    matches = match_gpu({"type": ["A100", "H100"], "count": 1, "minMemory": "48Gi"}, catalog)
    assert ids(matches) == ["a100-80g-sxm", "h100-80g-sxm", "h100-80g-pcie"]
    memory = [r.message for r in matches[0].reasons if r.kind == "Memory"]
    assert memory == ["80Gi per GPU ≥ minMemory 48Gi"]
    # 80Gi is 85899345920 bytes: a decimal floor just above it excludes the 80Gi cards.
    above = match_gpu({"type": ["A100"], "count": 1, "minMemory": "85899345921"}, catalog)
    assert ids(above) == []


def test_it_filters_by_nvlink_and_never_counts_infinity_fabric(
    catalog: AcceleratorCatalog,
) -> None:
    matches = match_gpu({"type": ["H100", "MI300X"], "count": 1, "interconnect": "NVLink"}, catalog)
    assert ids(matches) == ["h100-80g-sxm"]
    anything = match_gpu({"type": ["MI300X"], "count": 1, "interconnect": "Any"}, catalog)
    assert ids(anything) == ["mi300x-192g-oam"]


def test_it_needs_the_count_offered_and_lists_the_fitting_offerings(
    catalog: AcceleratorCatalog,
) -> None:
    matches = match_gpu({"type": ["H100"], "count": 8}, catalog)
    assert ids(matches) == ["h100-80g-sxm"]
    [fit] = matches[0].offerings
    assert (fit.variant, fit.count, fit.price_per_hour) == ("h100-80g-sxm", 8, 24.0)
    assert matches[0].reasons[-1].message == "8 GPUs per node offered"


def test_it_explains_why_a_variant_does_not_fit(catalog: AcceleratorCatalog) -> None:
    request = {"type": ["H100"], "count": 2, "interconnect": "NVLink", "minMemory": "90Gi"}
    explained = {m.variant.id: m for m in explain_gpu(request, catalog)}
    assert [r.message for r in explained["h100-80g-sxm"].rejections] == [
        "80Gi per GPU < minMemory 90Gi",
        "2 GPUs per node not offered (only 1, 8)",
    ]
    assert [r.message for r in explained["h100-80g-pcie"].rejections] == [
        "80Gi per GPU < minMemory 90Gi",
        "PCIe, not NVLink",
    ]
    assert explained["h100-94g-nvl"].fits
    assert not explained["h100-80g-sxm"].offerings


def test_it_keeps_the_requests_preference_order_and_lists_each_variant_once(
    catalog: AcceleratorCatalog,
) -> None:
    matches = match_gpu({"type": ["a100-80g-sxm", "H100", "A100"], "count": 1}, catalog)
    assert ids(matches) == ["a100-40g-sxm", "a100-80g-sxm", "h100-80g-sxm", "h100-80g-pcie"]
    assert matches[1].via == "a100-80g-sxm"
    assert matches[0].rule == "SameFamily"


def test_it_matches_nothing_without_a_known_type(catalog: AcceleratorCatalog) -> None:
    assert match_gpu(None, catalog) == []
    assert match_gpu({"count": 1}, catalog) == []
    assert match_gpu({"type": ["TPUv5", "h100"], "count": 1}, catalog) == []


def test_it_defaults_the_count_to_one_gpu(catalog: AcceleratorCatalog) -> None:
    assert ids(match_gpu({"type": ["h100-94g-nvl"], "exact": True}, catalog)) == []
    assert ids(match_gpu({"type": ["h100-80g-sxm"], "exact": True}, catalog)) == ["h100-80g-sxm"]


def test_it_serialises_a_match(catalog: AcceleratorCatalog) -> None:
    [match] = match_gpu({"type": ["a100-80g-sxm"], "exact": True, "count": 1}, catalog)
    assert match.as_dict() == {
        "accelerator": "a100-80g-sxm",
        "family": "A100",
        "acceleratorClass": "a100-80g",
        "via": "a100-80g-sxm",
        "rule": "ExactPin",
        "fits": True,
        "reasons": [
            {"kind": "ExactPin", "message": "pinned exactly: a100-80g-sxm"},
            {"kind": "Count", "message": "1 GPU per node offered"},
        ],
        "rejections": [],
        "offerings": [
            {"accelerator": "a100-80g-sxm", "count": 1, "cpu": "12", "memory": "170Gi",
             "disk": "1Ti", "pricePerHour": 1.75},
        ],
    }  # fmt: skip


def test_it_raises_each_floor_to_the_host_shape_when_larger(catalog: AcceleratorCatalog) -> None:
    h100 = catalog.variant("h100-80g-sxm").offering(1)  # 26 vCPU, 225Gi, 1Ti
    floors = {
        "cpu": "32",  # above 26: stays
        "memory": "64Gi",  # below 225Gi: raised
        "disk": "2000Gi",  # 2000Gi > 1Ti (1024Gi): stays
        "nodes": 2,
        "gpu": {"type": ["H100"], "count": 1, "minMemory": "40Gi"},
    }
    assert effective_resources(floors, h100) == {
        "cpu": "32",
        "memory": "225Gi",
        "disk": "2000Gi",
        "nodes": 2,
        "gpu": {"type": ["h100-80g-sxm"], "count": 1, "exact": True},
    }
    assert floors["memory"] == "64Gi"  # the input is left alone


def test_it_compares_quantities_by_value_not_text(catalog: AcceleratorCatalog) -> None:
    a100 = catalog.variant("a100-40g-sxm").offering(1)  # 12 vCPU, 85Gi, 512Gi
    # "12500m" is 12.5 vCPU, above 12; "0.5Ti" is exactly 512Gi, so the floor's text stays.
    result = effective_resources({"cpu": "12500m", "memory": "90000Mi", "disk": "0.5Ti"}, a100)
    assert result["cpu"] == "12500m"
    assert result["memory"] == "90000Mi"  # 90000Mi ≈ 87.9Gi > 85Gi
    assert result["disk"] == "0.5Ti"


def test_it_fills_missing_floors_from_the_host_and_leaves_cpu_work_alone(
    catalog: AcceleratorCatalog,
) -> None:
    mi300x = catalog.variant("mi300x-192g-oam").offering(1)
    assert effective_resources({}, mi300x) == {
        "cpu": "20",
        "memory": "240Gi",
        "disk": "5Ti",
        "gpu": {"type": ["mi300x-192g-oam"], "count": 1, "exact": True},
    }
    assert effective_resources({"cpu": "4", "memory": "8Gi"}, None) == {
        "cpu": "4",
        "memory": "8Gi",
    }
