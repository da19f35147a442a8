"""The catalog's links that change one thing: filter chips and their clear links, clear all,
sortable column headers with aria-sort, and the skip link. All of them work without JavaScript."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest

from tests.support.console import client_for, header, query_of, row_ids

pytestmark = pytest.mark.django_db


def chips(body: str) -> dict[str, str]:
    """Each chip's accessible name -> the query its clear link goes to."""
    found = re.findall(
        r'<a href="([^"]*)" class="chip-clear" data-chip-clear aria-label="([^"]*)"', body
    )
    return {unescape(label): unescape(href) for href, label in found}


def test_it_shows_a_chip_per_active_filter_that_clears_only_it(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    body = client.get("/?project=demo&task=SFT&task=Evaluate&q=demo&sort=-name&page=1").content
    found = chips(body.decode())
    assert set(found) == {
        "Clear filter Search: demo",
        "Clear filter Project: demo",
        "Clear filter Task: SFT",
        "Clear filter Task: Evaluate",
    }
    assert query_of(found["Clear filter Task: SFT"]) == {
        "project": ["demo"],
        "task": ["Evaluate"],
        "q": ["demo"],
        "sort": ["-name"],
    }
    # Following a chip's link is the view without that one filter.
    after = client.get("/" + found["Clear filter Project: demo"]).content.decode()
    assert "tr-demo-sft-demo" in row_ids(after)
    assert "Clear filter Project: demo" not in chips(after)
    assert "Clear filter Task: SFT" in chips(after)


def test_it_offers_clear_all_that_keeps_the_order(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    body = client.get("/?project=demo&family=H100&sort=task").content.decode()
    href = unescape(re.search(r'<a href="([^"]*)" class="clear-all"', body).group(1))
    assert query_of(href) == {"sort": ["task"]}
    cleared = client.get("/" + href).content.decode()
    assert chips(cleared) == {}
    assert "tr-nodus-sft-qwen3" in row_ids(cleared)


def test_it_shows_no_chips_without_filters_and_ignores_unknown_values(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    assert 'id="filter-chips"' not in client.get("/?sort=task").content.decode()
    body = client.get("/?task=Juggling").content.decode()
    assert "Clear filter Task: Juggling" not in chips(body)


def test_it_says_how_to_get_out_of_an_empty_result(catalog_data: Any) -> None:
    body = client_for(catalog_data["alice"]).get("/?project=demo&task=GRPO").content.decode()
    assert row_ids(body) == []
    empty = re.search(r'<p class="empty"[^>]*>(.*?)</p>', body, re.S).group(1)
    assert "No runtime matches these filters" in empty
    assert 'href="?"' in empty  # clear all


def test_it_sorts_by_a_column_header_and_marks_it_with_aria_sort(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    body = client.get("/?project=demo").content.decode()
    # By name by default: the Name header says so and offers the reverse order.
    name = header(body, "Name")
    assert 'aria-sort="ascending"' in name
    assert query_of(unescape(re.search(r'href="([^"]*)"', name).group(1)))["sort"] == ["-name"]
    assert "aria-sort" not in header(body, "Task")
    assert "href" not in header(body, "Models")  # not sortable
    assert row_ids(body) == ["tr-demo-eval-demo", "tr-demo-sft-demo"]
    task = unescape(re.search(r'href="([^"]*)"', header(body, "Task")).group(1))
    assert query_of(task) == {"project": ["demo"], "sort": ["task"]}
    by_task = client.get("/" + task).content.decode()
    assert 'aria-sort="ascending"' in header(by_task, "Task")
    assert "aria-sort" not in header(by_task, "Name")
    # Evaluate sorts before SFT; descending reverses it.
    assert row_ids(by_task) == ["tr-demo-eval-demo", "tr-demo-sft-demo"]
    reverse = client.get("/?project=demo&sort=-task").content.decode()
    assert 'aria-sort="descending"' in header(reverse, "Task")
    assert row_ids(reverse) == ["tr-demo-sft-demo", "tr-demo-eval-demo"]
    assert '<option value="-task" selected>' in reverse


def test_it_keeps_runtimes_without_an_estimate_last_in_either_order(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    for sort in ("fastest", "-fastest"):
        ids = row_ids(client.get(f"/?project=demo&sort={sort}").content.decode())
        assert ids == ["tr-demo-sft-demo", "tr-demo-eval-demo"], sort


def test_it_starts_every_page_with_a_skip_link(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    for path, target in (("/", "#runtime-rows"), ("/account/tokens", "#main")):
        body = client.get(path).content.decode()
        after_body = body[body.index("<body") :]
        first = re.search(r"<(a|button|input|select|textarea)\b[^>]*>", after_body).group(0)
        assert 'id="skip-link"' in first, path
        assert f'href="{target}"' in first, path
    catalog = client.get("/").content.decode()
    assert re.search(r'<tbody id="runtime-rows"[^>]*tabindex="-1"', catalog)
