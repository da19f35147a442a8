"""A project's Jobs page in a real browser, live as the catalog is: with a filter applied, jobs
created and compiled by another client through the API appear in (or leave) the filtered list,
and the count follows; a job the filter does not match is never listed; a page sorted by a click
on a column header takes a new job in where the order puts it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import result_counts, set_phase
from tests.support.api import job_manifest, runtime_manifest

pytestmark = pytest.mark.browser

GV = "/apis/nodus.dev/v1beta1"
JOBS = f"{GV}/namespaces/demo/trainingjobs"


def create_job(server: Any, name: str) -> None:
    answer = server.client("alice").post(JOBS, json=job_manifest(name))
    assert answer.status_code == 201, answer.text


def test_a_pending_filter_takes_new_jobs_in_and_lets_compiled_ones_go(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/p/demo/jobs?phase=Pending")
    s.wait_live()
    expect(page.locator("#job-phase")).to_have_value("Pending")
    shown, total = result_counts(page)

    create_job(s.server, "pending-one")
    row = page.locator("#job-demo-pending-one")
    expect(row).to_be_visible(timeout=10_000)
    expect(row.locator("td[data-label=Phase]")).to_contain_text("Pending")
    expect(page.locator("#result-count")).to_contain_text(f"{shown + 1} of {total + 1} ")

    # Compiled: it no longer matches the page's filter, and leaves; the total keeps it.
    set_phase(s.server, f"{JOBS}/pending-one", "Compiled")
    expect(row).to_have_count(0, timeout=10_000)
    expect(page.locator("#result-count")).to_contain_text(f"{shown} of {total + 1} ")
    expect(page.locator("#live-notice")).not_to_contain_text("Reload")
    s.shot("jobs-live-pending-filter")


def test_a_search_lists_the_job_it_matches_and_not_the_other(session_for: Any) -> None:
    s = session_for("bob")  # a viewer of demo: live updates need only read access
    page = s.go("/p/demo/jobs?q=wanted")
    s.wait_live()
    expect(page.locator("#job-q")).to_have_value("wanted")
    shown, total = result_counts(page)

    create_job(s.server, "unrelated-run")
    create_job(s.server, "wanted-run")
    expect(page.locator("#job-demo-wanted-run")).to_be_visible(timeout=10_000)
    # Both creations are reflected (the total has both), yet only the match is listed.
    expect(page.locator("#result-count")).to_contain_text(f"{shown + 1} of {total + 2} ")
    expect(page.locator("#job-demo-unrelated-run")).to_have_count(0)
    names = page.locator("#job-rows th[data-label=Name]").all_inner_texts()
    assert all("wanted" in n for n in names), names
    # The search box keeps what the user typed; the live redraw touched only the results.
    expect(page.locator("#job-q")).to_have_value("wanted")
    s.shot("jobs-live-search")


def test_a_job_created_after_sorting_by_a_header_lands_in_sorted_order(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/p/demo/jobs?sort=name")
    s.wait_live()
    for name in ("sorted-alpha", "sorted-zulu"):
        create_job(s.server, name)
    expect(page.locator("#job-demo-sorted-zulu")).to_be_visible(timeout=10_000)

    # By name, ascending (newest first is the default): one click on the Name header reverses it.
    name_header = page.locator("th", has=page.locator("#sort-name"))
    expect(name_header).to_have_attribute("aria-sort", "ascending")
    page.click("#sort-name")
    expect(page).to_have_url(re.compile(r"[?&]sort=-name\b"))
    name_header = page.locator("th", has=page.locator("#sort-name"))
    expect(name_header).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#job-sort")).to_have_value("-name")
    s.wait_live()

    # A job created through the API lands between the two, where the order puts it.
    create_job(s.server, "sorted-middle")
    expect(page.locator("#job-demo-sorted-middle")).to_be_visible(timeout=10_000)
    names = page.locator("#job-rows th[data-label=Name]").all_inner_texts()
    assert names == sorted(names, reverse=True), names
    assert names.index("sorted-zulu") < names.index("sorted-middle") < names.index("sorted-alpha")
    expect(name_header).to_have_attribute("aria-sort", "descending")
    s.shot("jobs-live-sorted")


def test_the_runtime_menu_offers_a_runtime_a_new_job_names_and_keeps_the_choice(
    session_for: Any,
) -> None:
    s = session_for("alice")
    create_job(s.server, "menu-first")
    page = s.go("/p/demo/jobs?runtime=sft-qwen3")
    s.wait_live()
    menu = page.locator("#job-runtime")
    expect(menu).to_have_value("sft-qwen3")
    expect(menu.locator("option[value=menu-runtime]")).to_have_count(0)
    menu.focus()

    # A runtime of the project, and a job naming it, created through the API by another client.
    runtime = runtime_manifest(
        "menu-runtime",
        defaults={"resources": {"gpu": {"type": ["H100"], "count": 1}}},
        estimate={"secondsPerStep": {"h100-80g": 0.5}},
    )
    made = s.server.client("alice").post(f"{GV}/namespaces/demo/trainingruntimes", json=runtime)
    assert made.status_code == 201, made.text
    job = job_manifest("menu-second", runtimeRef={"name": "menu-runtime"})
    answer = s.server.client("alice").post(JOBS, json=job)
    assert answer.status_code == 201, answer.text

    expect(menu.locator("option[value=menu-runtime]")).to_have_count(1, timeout=10_000)
    # The user's choice and focus stay; the new job is not listed (it runs another runtime).
    expect(menu).to_have_value("sft-qwen3")
    expect(menu).to_be_focused()
    expect(page.locator("#job-demo-menu-second")).to_have_count(0)
    # ... and picking the new runtime filters by it, without a reload.
    menu.select_option("menu-runtime")
    expect(page.locator("#job-demo-menu-second")).to_be_visible(timeout=10_000)
    expect(page).to_have_url(re.compile(r"[?&]runtime=menu-runtime\b"))


def test_a_filter_change_being_answered_is_not_undone_by_a_push(session_for: Any) -> None:
    s = session_for("alice")
    create_job(s.server, "choice-first")
    page = s.go("/p/demo/jobs?runtime=sft-qwen3")
    s.wait_live()
    menu = page.locator("#job-runtime")
    expect(menu).to_have_value("sft-qwen3")
    page.evaluate(
        "window.pushes = 0;"
        "document.addEventListener('htmx:wsBeforeMessage', function () { window.pushes++; });"
    )
    # The filter request the new choice (any runtime) makes is held back while a push for what
    # the page showed before (sft-qwen3 chosen) arrives: it must not undo the choice, nor take
    # the place of the block the answer is meant for.
    held: list[Any] = []

    def hold(route: Any) -> None:
        held.append(route)

    page.route(re.compile(r"/p/demo/jobs\?"), hold)
    menu.select_option("")
    create_job(s.server, "choice-second")
    for _ in range(200):  # waits for the push (up to 10 s); page.wait_for_function needs eval
        if page.evaluate("() => window.pushes") > 0:
            break
        page.wait_for_timeout(50)
    else:
        raise AssertionError("no push arrived")
    expect(menu).to_have_value("")
    assert held, "the filter request was not made"
    for route in held:
        route.continue_()
    page.unroute(re.compile(r"/p/demo/jobs\?"), hold)
    expect(page.locator("#live-watch")).to_have_attribute("data-query", re.compile(r"runtime=&"))
    expect(page.locator("#job-demo-choice-second")).to_be_visible()
    expect(menu).to_have_value("")
