"""The Accelerator kind's printer columns, filled from a catalog variant's object."""

from __future__ import annotations

from runtimes.catalog.accelerators import accelerator_objects, parse_catalog
from runtimes.registry.accelerator.strategy import ACCELERATOR_COLUMNS, table_row
from tests.support.catalogs import small_catalog_data


def test_it_fills_the_columns_kubectl_prints_from_the_variant() -> None:
    [obj] = accelerator_objects(parse_catalog(small_catalog_data()))
    assert table_row(obj) == ["H100", "80Gi", "h100-80g", True, 2]
    assert [c["name"] for c in ACCELERATOR_COLUMNS] == [
        "Family", "Memory", "Class", "NVLink", "Offerings",
    ]  # fmt: skip
