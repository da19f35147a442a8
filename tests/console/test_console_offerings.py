"""The hardware choice on the Parameters tab: offerings by duration or cost, the cheapest and the
fastest marked, the plan's own row, and the accelerator menu by family with memory and price."""

from __future__ import annotations

import re
from typing import Any

import pytest

from runtimes.catalog.accelerators import catalog
from tests.support.console import client_for, form_fields

pytestmark = pytest.mark.django_db
SFT = "/p/nodus/runtimes/sft-qwen3"


def checked(client: Any, **changes: str) -> str:
    html = client.get(f"{SFT}/parameters").content.decode()
    job = {
        "job.model": "Qwen/Qwen3-0.6B",
        "job.method": "LoRA",
        "job.data": "hf://datasets/nodus/alpaca",
        "job.amount": "300",
    }
    data = form_fields(html[html.index('<form id="param-form"') :], **{**job, **changes})
    return client.post(f"{SFT}/parameters/check", data).content.decode()


def rows(body: str) -> list[dict[str, Any]]:
    table = re.search(r'<table class="small offerings cards">.*?</table>', body, re.S).group(0)
    found = []
    for variant, attrs, cells in re.findall(
        r'<tr data-variant="([^"]+)"([^>]*)>(.*?)</tr>', table, re.S
    ):
        duration = re.search(r'data-label="Duration" class="num">([^<]*)<', cells).group(1)
        cost = re.search(r'data-label="Cost" class="num">\$?([^<]*)<', cells).group(1)
        found.append(
            {
                "variant": variant,
                "planned": 'class="planned"' in attrs,
                "marks": set(re.findall(r'data-mark="(\w+)"', cells)),
                "cost": float(cost.replace(",", "")) if cost != "—" else None,
                "duration": duration,
            }
        )
    return found


def test_offerings_sort_by_duration_or_cost_and_mark_the_cheapest_and_fastest(
    catalog_data: Any,
) -> None:
    client = client_for(catalog_data["bob"])
    by_time = rows(checked(client))
    assert len(by_time) > 2
    costs = [r["cost"] for r in by_time if r["cost"] is not None]
    cheapest = [r for r in by_time if "cheapest" in r["marks"]]
    fastest = [r for r in by_time if "fastest" in r["marks"]]
    assert len(cheapest) == 1
    assert cheapest[0]["cost"] == min(costs)
    assert len(fastest) == 1
    assert fastest[0] is by_time[0]
    # Without an accelerator chosen, the plan is the fastest.
    assert [r["variant"] for r in by_time if r["planned"]] == [by_time[0]["variant"]]

    by_cost = rows(checked(client, _offers="cost"))
    priced = [r["cost"] for r in by_cost if r["cost"] is not None]
    assert priced == sorted(priced)
    assert "cheapest" in by_cost[0]["marks"]
    assert sorted(r["variant"] for r in by_cost) == sorted(r["variant"] for r in by_time)


def test_choosing_the_cheapest_makes_it_the_plan_and_keeps_the_others(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    first = rows(checked(client))
    cheapest = next(r for r in first if "cheapest" in r["marks"])
    body = checked(client, **{"job.accelerator": cheapest["variant"]})
    again = rows(body)
    assert [r["variant"] for r in again if r["planned"]] == [cheapest["variant"]]
    assert {r["variant"] for r in again} == {r["variant"] for r in first}
    assert f"accelerator: {cheapest['variant']}" in body  # the manifest carries the choice
    # The other rows offer to become the plan.
    assert f'data-plan-accelerator="{first[0]["variant"]}"' in body


def test_the_accelerator_menu_groups_by_family_with_memory_and_price(catalog_data: Any) -> None:
    body = client_for(catalog_data["bob"]).get(f"{SFT}/parameters").content.decode()
    menu = re.search(r'<select id="job-accelerator".*?</select>', body, re.S).group(0)
    groups = dict(re.findall(r'<optgroup label="([^"]+)">(.*?)</optgroup>', menu, re.S))
    assert len(groups) > 1
    accelerators = catalog()
    for family, options in groups.items():
        values = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', options)
        assert values[0][0] == family  # "any H100" first
        for value, label in values[1:]:
            variant = accelerators.variants[value]
            assert variant.family == family
            assert variant.memory in label
            per_gpu = min(o.price_per_hour / o.count for o in variant.offerings)
            assert f"${per_gpu:,.2f}/h" in label
