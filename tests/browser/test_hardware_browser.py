"""Choosing hardware by cost in a real browser: the offerings table marks the cheapest and the
fastest and re-plans on the choice, the accelerator menu groups by family, the summary stays in
view on a phone, and the Accelerators page is one click from anywhere."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 800}


def a_job(s: Any) -> Page:
    """sft-qwen3's Parameters tab filled in with a job that compiles."""
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    page.select_option("#job-model", "Qwen/Qwen3-0.6B")
    page.select_option("#job-method", "LoRA")
    page.fill("#job-data", "hf://datasets/nodus/alpaca")
    page.fill("#job-amount", "300")
    expect(page.locator("#param-verdict")).to_have_text(
        re.compile("Valid: this job compiles"), timeout=10_000
    )
    expect(page.locator("#offerings")).to_be_visible()
    return page


def cost(row: Any) -> float:
    return float(row.locator("td[data-label=Cost]").inner_text().strip("$").replace(",", ""))


def test_the_offerings_table_marks_the_cheapest_and_fastest_and_replans_on_the_choice(
    session_for: Any,
) -> None:
    s = session_for("alice", viewport={"width": 1366, "height": 900})
    page = a_job(s)
    rows = page.locator("#offerings tbody tr")
    cheapest = page.locator("#offerings tbody tr:has([data-mark=cheapest])")
    fastest = page.locator("#offerings tbody tr:has([data-mark=fastest])")
    expect(cheapest).to_have_count(1)
    expect(fastest).to_have_count(1)
    # Fastest first, and the plan is the fastest until the user chooses.
    expect(rows.first.locator("[data-mark=fastest]")).to_be_visible()
    expect(rows.first).to_have_class(re.compile(r"\bplanned\b"))
    priced = [cost(rows.nth(i)) for i in range(rows.count())]
    assert cost(cheapest) == min(priced)
    s.shot("offerings-fastest-first")

    # Cheapest first: the same offerings, by cost.
    page.get_by_label("Cheapest first").check()
    expect(rows.first.locator("[data-mark=cheapest]")).to_be_visible(timeout=10_000)
    by_cost = [cost(rows.nth(i)) for i in range(rows.count())]
    assert by_cost == sorted(by_cost)

    # The user plans on the cheapest: the job names its variant and the plan moves there.
    variant = cheapest.get_attribute("data-variant")
    assert variant
    cheapest.get_by_role("button", name=f"Plan on {variant}").click()
    expect(page.locator("#job-manifest")).to_contain_text(f"accelerator: {variant}", timeout=10_000)
    expect(page.locator("#job-accelerator")).to_have_value(variant)
    planned = page.locator("#offerings tbody tr.planned")
    expect(planned).to_have_count(1)
    expect(planned).to_have_attribute("data-variant", variant)
    expect(planned).to_contain_text("In the plan")
    # The other offerings stay, each offering to become the plan.
    expect(rows).to_have_count(len(priced))
    page.locator("#offerings").scroll_into_view_if_needed()
    s.shot("offerings-planned-on-cheapest", full_page=False)


def test_the_accelerator_menu_groups_by_family_with_memory_and_price(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    groups = page.locator("#job-accelerator optgroup")
    assert groups.count() > 1
    for i in range(groups.count()):
        labels = groups.nth(i).locator("option").all_inner_texts()
        assert labels[0].startswith("any ")
        assert all(re.search(r"\d+Gi .*\$\d+\.\d\d/h GPU", label) for label in labels)


def test_the_summary_stays_in_view_on_a_phone(session_for: Any) -> None:
    s = session_for("alice", viewport=PHONE)
    page = a_job(s)
    summary = page.locator("#plan-summary")
    expect(summary).to_contain_text("Valid: this job compiles")
    expect(summary).to_contain_text("Cheapest")
    # Far down the form, where the output panel is still below: the summary is in view.
    page.get_by_role("button", name="Check job").scroll_into_view_if_needed()
    assert page.evaluate("() => window.scrollY") > 1500
    box = summary.bounding_box()
    assert box is not None
    assert box["y"] >= 0
    assert box["y"] + box["height"] <= PHONE["height"]
    s.shot("parameters-phone-summary", full_page=False)
    summary.get_by_role("button", name="Create job").click()
    expect(page.locator("#create-job-result")).to_contain_text("Created job", timeout=10_000)
    page.locator("#offerings").scroll_into_view_if_needed()
    s.shot("parameters-phone-offerings", full_page=False)


def test_the_accelerators_page_is_in_the_navigation_and_says_what_an_estimate_is(
    session_for: Any,
) -> None:
    s = session_for("bob")
    page = s.go("/p/demo/jobs")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Accelerators").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Accelerators")
    expect(page.locator("#estimate-basis-title")).to_have_text("What an estimate is based on")
    expect(page.locator(".estimate-basis")).to_contain_text("seconds")
    expect(page.locator(".accelerator-family").first).to_be_visible()
    s.shot("accelerators")
    # A runtime measured on a class links to its Estimates tab.
    page.locator(".estimates-matrix a[href$='/estimates']").first.click()
    expect(page.locator("#runtime-tabs [aria-current=page]")).to_have_text("Estimates")
    phone = session_for("bob", viewport=PHONE)
    phone.go("/accelerators")
    phone.shot("accelerators-phone")
