"""Estimates: expected seconds and cost per offering, checked against hand-computed numbers."""

from __future__ import annotations

import pytest

from runtimes.catalog.accelerators import AcceleratorCatalog, parse_catalog
from runtimes.catalog.estimates import estimate, scale_factors


def variant(variant_id: str, memory: str, klass: str, price: float) -> dict:
    return {
        "id": variant_id,
        "memory": memory,
        "nvlink": variant_id.endswith("sxm"),
        "acceleratorClass": klass,
        "offerings": [
            {"count": 1, "cpu": "16", "memory": "128Gi", "disk": "1Ti", "pricePerHour": price},
            {"count": 2, "cpu": "32", "memory": "256Gi", "disk": "2Ti", "pricePerHour": price * 2},
        ],
    }


@pytest.fixture(scope="module")
def catalog() -> AcceleratorCatalog:
    return parse_catalog(
        {
            "families": [
                {"name": "H100", "vendor": "NVIDIA", "variants": [
                    variant("h100-80g-sxm", "80Gi", "h100-80g", 3.0),
                    variant("h100-80g-pcie", "80Gi", "h100-80g", 2.5),
                ]},
                {"name": "A100", "vendor": "NVIDIA", "variants": [
                    variant("a100-80g-sxm", "80Gi", "a100-80g", 1.8),
                ]},
                {"name": "L4", "vendor": "NVIDIA", "variants": [
                    variant("l4-24g-pcie", "24Gi", "l4-24g", 0.5),
                ]},
            ]
        }
    )  # fmt: skip


def training_spec(gpu: dict, nodes: int = 1) -> dict:
    return {
        "task": "GRPO",
        "defaults": {
            "parameters": {"batchSize": 8, "gradientAccumulation": 2, "maxCompletionLength": 256},
            "resources": {"cpu": "8", "nodes": nodes, "gpu": gpu},
        },
        # l4-24g was never measured.
        "estimate": {"secondsPerStep": {"h100-80g": 0.5, "a100-80g": 1.2}},
    }


def rows_as_tuples(rows: list) -> list[tuple]:
    return [(r.offering.variant, r.offering.count, r.seconds, r.cost) for r in rows]


def test_it_scales_steps_by_a_larger_batch(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["h100-80g-sxm", "a100-80g-sxm"], "exact": True, "count": 1})
    rows = estimate(spec, {"batchSize": 16}, {"steps": 1000}, catalog)
    # h100: 1000 steps x 0.5 s x (16 / 8 = 2) = 1000 s; 1000 / 3600 h x $3.00 = $0.8333
    # a100: 1000 steps x 1.2 s x 2 = 2400 s; 2400 / 3600 h x $1.80 = $1.20
    assert rows_as_tuples(rows) == [
        ("h100-80g-sxm", 1, 1000.0, 0.8333),
        ("a100-80g-sxm", 1, 2400.0, 1.2),
    ]
    assert [r.accelerator_class for r in rows] == ["h100-80g", "a100-80g"]


def test_it_never_speeds_up_for_smaller_values(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["h100-80g-sxm"], "exact": True, "count": 1})
    rows = estimate(spec, {"batchSize": 4, "gradientAccumulation": 1}, {"steps": 1000}, catalog)
    # both below the defaults (8, 2): factors 1; 1000 x 0.5 = 500 s; 500 / 3600 x $3 = $0.4167
    assert rows_as_tuples(rows) == [("h100-80g-sxm", 1, 500.0, 0.4167)]


def test_it_multiplies_all_three_factors(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["h100-80g-sxm"], "exact": True, "count": 1})
    job = {"batchSize": 16, "gradientAccumulation": 3, "maxCompletionLength": 1024}
    rows = estimate(spec, job, {"steps": 100}, catalog)
    # 100 x 0.5 x (16/8 = 2) x (3/2 = 1.5) x (1024/256 = 4) = 600 s; 600 / 3600 x $3 = $0.50
    assert rows_as_tuples(rows) == [("h100-80g-sxm", 1, 600.0, 0.5)]
    assert scale_factors(spec["defaults"]["parameters"], job) == {
        "batchSize": 2.0,
        "gradientAccumulation": 1.5,
        "maxCompletionLength": 4.0,
    }


def test_it_charges_every_node(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["h100-80g-sxm"], "exact": True, "count": 2}, nodes=2)
    rows = estimate(spec, {}, {"steps": 3600}, catalog)
    # 3600 x 0.5 = 1800 s = 0.5 h; 2 GPUs at $6.00/h per node x 2 nodes x 0.5 h = $6.00
    assert rows_as_tuples(rows) == [("h100-80g-sxm", 2, 1800.0, 6.0)]
    assert rows[0].nodes == 2


def test_it_times_evaluation_by_tasks_without_scaling(catalog: AcceleratorCatalog) -> None:
    spec = {
        "task": "Evaluate",
        "defaults": {"parameters": {"batchSize": 8}, "resources": {"gpu": {"type": ["A100"]}}},
        "estimate": {"secondsPerTask": {"a100-80g": 4.5}},
    }
    rows = estimate(spec, {"batchSize": 64}, {"tasks": 40}, catalog)
    # 40 tasks x 4.5 s = 180 s (batchSize plays no part); 180 / 3600 x $1.80 = $0.09
    assert rows_as_tuples(rows) == [("a100-80g-sxm", 1, 180.0, 0.09)]


def test_it_skips_unmeasured_classes_and_puts_the_cheaper_of_equals_first(
    catalog: AcceleratorCatalog,
) -> None:
    spec = training_spec({"type": ["L4", "H100"], "count": 1})
    rows = estimate(spec, {}, {"steps": 720}, catalog)
    # both H100 variants share class h100-80g: 720 x 0.5 = 360 s = 0.1 h
    # pcie 0.1 x $2.50 = $0.25 before sxm 0.1 x $3.00 = $0.30; L4 was never measured
    assert rows_as_tuples(rows) == [
        ("h100-80g-pcie", 1, 360.0, 0.25),
        ("h100-80g-sxm", 1, 360.0, 0.3),
    ]


def test_it_uses_given_resources_instead_of_the_defaults(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["H100"], "count": 1})
    preset = {"nodes": 1, "gpu": {"type": ["A100"], "count": 2}}
    rows = estimate(spec, {}, {"steps": 100}, catalog, resources=preset)
    # 100 x 1.2 = 120 s; 2 x A100 at $3.60/h: 120 / 3600 x 3.6 = $0.12
    assert rows_as_tuples(rows) == [("a100-80g-sxm", 2, 120.0, 0.12)]


def test_it_needs_exactly_one_kind_of_work(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["H100"], "count": 1})
    with pytest.raises(ValueError, match="exactly one of steps or tasks"):
        estimate(spec, {}, {"steps": 1, "tasks": 1}, catalog)
    with pytest.raises(ValueError, match="exactly one of steps or tasks"):
        estimate(spec, {}, {}, catalog)


def test_it_ignores_factors_without_a_numeric_default() -> None:
    assert scale_factors({"batchSize": "8"}, {"batchSize": 16, "maxCompletionLength": 512}) == {
        "batchSize": 1.0,
        "gradientAccumulation": 1.0,
        "maxCompletionLength": 1.0,
    }
    assert scale_factors(None, None)["batchSize"] == 1.0


def test_it_serialises_a_row(catalog: AcceleratorCatalog) -> None:
    spec = training_spec({"type": ["l4-24g-pcie"], "exact": True, "count": 1})
    spec["estimate"]["secondsPerStep"]["l4-24g"] = 2.0
    [row] = estimate(spec, {}, {"steps": 90}, catalog)
    # 90 x 2.0 = 180 s; 180 / 3600 x $0.50 = $0.025
    assert row.as_dict() == {
        "acceleratorClass": "l4-24g",
        "seconds": 180.0,
        "offering": {"accelerator": "l4-24g-pcie", "count": 1, "cpu": "16", "memory": "128Gi",
                     "disk": "1Ti", "pricePerHour": 0.5},
        "nodes": 1,
        "cost": 0.025,
    }  # fmt: skip
