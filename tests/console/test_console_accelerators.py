"""The Accelerators page: the catalog by family, what an estimate is based on, and the runtimes
with a measured time for each class (only those the caller may read)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from runtimes.catalog.accelerators import catalog
from tests.support.console import client_for

pytestmark = pytest.mark.django_db


def test_it_lists_every_family_and_variant_with_memory_interconnect_and_price(
    catalog_data: Any,
) -> None:
    body = client_for(catalog_data["bob"]).get("/accelerators").content.decode()
    accelerators = catalog()
    for family in accelerators.families.values():
        assert f'id="family-{family.name.lower().replace(" ", "-")}"' in body
        for variant_id in family.variants:
            variant = accelerators.variants[variant_id]
            block = re.search(
                rf'<tr class="accelerator-variant" id="variant-{variant_id}">(.*?)</tr>',
                body,
                re.S,
            ).group(1)
            assert f"{variant.memory} per GPU" in block
            assert variant.interconnect in block
            assert variant.accelerator_class in block
            for offering in variant.offerings:
                assert f"${offering.price_per_hour:,.2f}" in block
    assert "seconds per step" in body
    assert "spec.estimate.secondsPerStep" in body
    assert '<a href="/accelerators">Accelerators</a>' in body  # in the navigation


def test_it_names_the_runtimes_measured_on_each_class_that_the_caller_may_read(
    catalog_data: Any,
) -> None:
    def runtimes_on(who: str, variant: str) -> list[tuple[str, str]]:
        """The runtimes with a time in the column of the variant's class."""
        body = client_for(catalog_data[who]).get("/accelerators").content.decode()
        table = re.search(r'<table class="small estimates-matrix">.*?</table>', body, re.S)
        if table is None:
            return []
        columns = re.findall(r'<th scope="col" class="num" id="class-([^"]+)"', table.group(0))
        column = columns.index(catalog().variants[variant].accelerator_class)
        found = []
        for row in re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", table.group(0), re.S):
            link = re.search(r'<a href="/p/([^/]+)/runtimes/([^/]+)/estimates">', row)
            cells = re.findall(r'<td class="num">([^<]*)</td>', row)
            if link and cells[column] != "—":
                found.append((link.group(1), link.group(2)))
        return found

    # sft-demo (demo) has a time for h100-80g only: bob (viewer of demo) sees it there.
    assert ("demo", "sft-demo") in runtimes_on("bob", "h100-80g-sxm")
    assert ("demo", "sft-demo") not in runtimes_on("bob", "h100-94g-nvl")
    # charlie does not read demo: the runtime is not named for him.
    assert ("demo", "sft-demo") not in runtimes_on("charlie", "h100-80g-sxm")


def test_anonymous_callers_are_sent_to_sign_in(client: Any, db: Any) -> None:
    response = client.get("/accelerators")
    assert response.status_code == 302
    assert "/login" in response["Location"]
