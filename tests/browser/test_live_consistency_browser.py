"""Live consistency in a real browser, with the changes made by another client through the API:
the catalog's count, facet counts and order follow them; a deleted runtime's page says so and
turns its actions off (and answers 404 on reload); a dropped socket shows "reconnecting…" and
resumes from the last revision the page had, every change once, none missing."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from runtimes.console.runtime_page import TABS
from tests.browser.conftest import result_counts, set_phase
from tests.support.watch_live import manifest

pytestmark = pytest.mark.browser

GV = "/apis/nodus.dev/v1beta1"
RUNTIMES = f"{GV}/namespaces/demo/trainingruntimes"


def facet(page: Page, name: str, value: str) -> Any:
    return page.locator(f"label:has(input[name={name}][value={value}]) .count")


def test_the_catalog_keeps_count_facets_and_order_as_runtimes_come_and_go(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo&sort=name")
    s.wait_live()
    shown, total = result_counts(page)
    pending = facet(page, "phase", "Pending")
    pending_before = int(pending.inner_text()) if pending.count() else 0
    ready = facet(page, "phase", "Ready")
    ready_before = int(ready.inner_text()) if ready.count() else 0
    rows = page.locator("#runtime-rows tr")
    api = s.server.client("alice")

    assert api.post(RUNTIMES, json=manifest("aaa-live-first")).status_code == 201
    # Inserted where the sort by name puts it (first), not appended at the bottom.
    expect(rows.first).to_have_attribute("id", "tr-demo-aaa-live-first", timeout=10_000)
    expect(page.locator("#result-count")).to_contain_text(f"{shown + 1} of {total + 1} ")
    expect(pending).to_have_text(str(pending_before + 1))
    assert api.post(RUNTIMES, json=manifest("zzz-live-last")).status_code == 201
    expect(rows.last).to_have_attribute("id", "tr-demo-zzz-live-last", timeout=10_000)
    expect(page.locator("#result-count")).to_contain_text(f"{shown + 2} of {total + 2} ")
    expect(pending).to_have_text(str(pending_before + 2))
    s.shot("catalog-live-sorted")

    set_phase(s.server, f"{RUNTIMES}/zzz-live-last", "Ready")
    expect(pending).to_have_text(str(pending_before + 1), timeout=10_000)
    expect(ready).to_have_text(str(ready_before + 1))
    assert api.delete(f"{RUNTIMES}/aaa-live-first").status_code == 200
    expect(page.locator("#tr-demo-aaa-live-first")).to_have_count(0, timeout=10_000)
    expect(page.locator("#result-count")).to_contain_text(f"{shown + 1} of {total + 1} ")
    if pending_before:
        expect(pending).to_have_text(str(pending_before))
    else:
        expect(pending).to_have_count(0)  # a value nothing has is not offered
    assert api.delete(f"{RUNTIMES}/zzz-live-last").status_code == 200
    expect(page.locator("#tr-demo-zzz-live-last")).to_have_count(0, timeout=10_000)


def test_a_row_that_stops_matching_the_filters_goes(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo&phase=Pending")
    s.wait_live()
    shown, total = result_counts(page)
    api = s.server.client("alice")
    assert api.post(RUNTIMES, json=manifest("pending-for-now")).status_code == 201
    row = page.locator("#tr-demo-pending-for-now")
    expect(row).to_be_visible(timeout=10_000)
    set_phase(s.server, f"{RUNTIMES}/pending-for-now", "Ready")
    expect(row).to_have_count(0, timeout=10_000)
    expect(page.locator("#result-count")).to_contain_text(f"{shown} of {total + 1} ")
    assert api.delete(f"{RUNTIMES}/pending-for-now").status_code == 200


def test_a_deleted_runtimes_page_says_so_and_turns_its_actions_off(session_for: Any) -> None:
    s = session_for("alice")
    api = s.server.client("alice")
    assert api.post(RUNTIMES, json=manifest("doomed")).status_code == 201
    page = s.go("/p/demo/runtimes/doomed/parameters")
    s.wait_live()
    controls = "#param-form :is(input, select, textarea, button):not([data-copy])"
    # Create job is there (refused until the inputs are given) and the form can be filled.
    expect(page.locator("#create-job")).to_be_visible()
    expect(page.locator(f"{controls}:enabled").first).to_be_enabled()
    expect(page.locator("#runtime-header").get_by_role("link", name="Edit")).to_be_visible()

    assert api.delete(f"{RUNTIMES}/doomed").status_code == 200
    banner = page.locator("#runtime-header [role=alert]")
    expect(banner).to_contain_text("This runtime was deleted at", timeout=10_000)
    expect(page.locator("#runtime-header").get_by_role("link", name="Edit")).to_have_count(0)
    expect(page.locator("#runtime-header").get_by_role("link", name="Delete")).to_have_count(0)
    expect(page.locator("#runtime-tabs a")).to_have_count(0)
    expect(page.locator("#runtime-tabs [aria-disabled=true]")).to_have_count(len(TABS))
    expect(page.locator("#create-job")).to_be_disabled()
    expect(page.locator(f"{controls}:enabled")).to_have_count(0)
    expect(page.locator(controls).first).to_be_disabled()
    expect(page.locator("#param-form [data-copy]").first).to_be_enabled()  # what is shown
    s.shot("runtime-deleted-live")

    response = page.reload()
    assert response is not None
    assert response.status == 404
    expect(page.locator("h1")).to_contain_text("Runtime demo/doomed was deleted")
    expect(page.get_by_role("link", name="Runtimes in demo")).to_be_visible()
    s.shot("runtime-deleted-404")
    # That reload's 404 is the point; nothing else may have failed.
    s.errors[:] = [e for e in s.errors if "404" not in e]


def test_a_dropped_socket_says_reconnecting_and_resumes_without_gap_or_duplicate(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page = s.page
    down = {"now": False}
    routes: list[WebSocketRoute] = []
    from_page: list[dict[str, Any]] = []

    def route(ws: WebSocketRoute) -> None:
        if down["now"]:
            ws.close(code=1013, reason="try again later")  # as a server that is not back yet
            return
        server = ws.connect_to_server()

        def forward(message: str | bytes) -> None:
            from_page.append(json.loads(message))
            server.send(message)

        ws.on_message(forward)
        # Closing the page's side closes the server's with a code a browser may send.
        ws.on_close(lambda code, reason: server.close())
        routes.append(ws)

    page.context.route_web_socket(re.compile(r"/ws/console$"), route)
    s.go("/?project=demo&sort=name")
    s.wait_live()
    api = s.server.client("alice")
    assert api.post(RUNTIMES, json=manifest("rc-before")).status_code == 201
    expect(page.locator("#tr-demo-rc-before")).to_be_visible(timeout=10_000)
    had = page.locator("#live-revision").get_attribute("data-revision")
    assert had

    down["now"] = True
    routes[-1].close(code=1001, reason="going away")  # the server went away, cleanly
    expect(page.locator("#live .live-text")).to_have_text("reconnecting…")
    expect(page.locator("#live")).to_have_attribute("data-state", "reconnecting")
    expect(page.locator("#live")).to_have_attribute("aria-live", "polite")
    # Changes made while it is down: two created, one changed, one deleted.
    assert api.post(RUNTIMES, json=manifest("rc-while-one")).status_code == 201
    assert api.post(RUNTIMES, json=manifest("rc-while-two")).status_code == 201
    set_phase(s.server, f"{RUNTIMES}/rc-while-one", "Ready")
    assert api.delete(f"{RUNTIMES}/rc-before").status_code == 200
    listed = api.get(RUNTIMES).json()
    latest = listed["metadata"]["resourceVersion"]
    expect(page.locator("#tr-demo-rc-while-one")).to_have_count(0)  # nothing came through
    s.shot("live-reconnecting", full_page=False)

    down["now"] = False
    s.wait_live()
    # It resumed from the revision the page had when the socket dropped...
    expect(page.locator("#live-revision")).to_have_attribute("data-revision", latest)
    watches = [m for m in from_page if m.get("type") == "watch"]
    assert watches[-1]["revision"] == int(had)
    assert watches[-1]["view"] == "catalog"
    # ... and every change shows once, none missing.
    expect(page.locator("#tr-demo-rc-while-one")).to_have_count(1)
    expect(page.locator("#tr-demo-rc-while-one .badge.phase-ready")).to_be_visible()
    expect(page.locator("#tr-demo-rc-while-two")).to_have_count(1)
    expect(page.locator("#tr-demo-rc-before")).to_have_count(0)
    ids = page.locator("#runtime-rows tr").evaluate_all("rows => rows.map(r => r.id)")
    assert len(ids) == len(set(ids))
    names = sorted(o["metadata"]["name"] for o in listed["items"])
    assert ids == [f"tr-demo-{n}" for n in names]
    assert result_counts(page)[0] == len(names)
