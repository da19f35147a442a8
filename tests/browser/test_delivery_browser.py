"""The catalog and a runtime page as a browser loads them: bytes on the wire (the page compressed,
our CSS and JS within budget) and time to first render, printed; a second page takes every
static file from the browser's cache. Timings are printed, never asserted."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.browser.conftest import Session
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

PAGE_BUDGET = 100_000
ASSET_BUDGET = 80_000
PAGES = ("/", "/p/nodus/runtimes/sft-qwen3/overview", "/p/nodus/runtimes/sft-qwen3/parameters")
MEASURE = """
() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = Object.fromEntries(
    performance.getEntriesByType("paint").map((p) => [p.name, Math.round(p.startTime)])
  );
  const statics = performance.getEntriesByType("resource")
    .filter((r) => new URL(r.name).pathname.startsWith("/static/"))
    .map((r) => ({path: new URL(r.name).pathname, transfer: r.transferSize,
                  encoded: r.encodedBodySize, decoded: r.decodedBodySize}));
  return {page: {transfer: nav.transferSize, encoded: nav.encodedBodySize,
                 decoded: nav.decodedBodySize}, paint, statics};
}
"""


def measure(session: Session, path: str) -> dict[str, Any]:
    page = session.go(path)
    page.wait_for_load_state("load")
    # Asked from here, not with wait_for_function: that evaluates its string inside the page,
    # which the CSP (no 'unsafe-eval') refuses whenever the first look finds no paint yet.
    for _ in range(100):
        if page.evaluate("() => performance.getEntriesByType('paint').length > 0"):
            break
        page.wait_for_timeout(100)
    figures: dict[str, Any] = page.evaluate(MEASURE)
    return figures


def test_it_loads_pages_within_budget_and_reports_first_render(
    browser: Browser, daphne_server: LiveServer
) -> None:
    signing_in = browser.new_context()
    try:
        Session(signing_in.new_page(), daphne_server).login("alice")
        signed_in = signing_in.storage_state()
    finally:
        signing_in.close()
    report = ["", "page loads (bytes: on the wire / encoded body / decoded body; ms)"]
    for path in PAGES:
        # A browser of its own per page, signed in but with nothing cached: a first visit.
        context = browser.new_context(
            viewport={"width": 1280, "height": 900},
            storage_state=signed_in,  # type: ignore[arg-type]
        )
        try:
            session = Session(context.new_page(), daphne_server)
            cold = measure(session, path)
            again = measure(session, PAGES[0] if path != PAGES[0] else PAGES[1])
            assert session.errors == []
        finally:
            context.close()
        page, statics = cold["page"], cold["statics"]
        report.append(
            f"{path}: page {page['transfer']} / {page['encoded']} / {page['decoded']}; "
            f"first paint {cold['paint'].get('first-paint')} ms, first contentful paint "
            f"{cold['paint'].get('first-contentful-paint')} ms"
        )
        report += [
            f"    {s['path']}: {s['transfer']} / {s['encoded']} / {s['decoded']}" for s in statics
        ]
        total = sum(s["encoded"] for s in statics)
        report.append(f"    CSS + JS: {total} bytes encoded")
        assert page["encoded"] < page["decoded"], f"{path} was not compressed"
        assert page["encoded"] < PAGE_BUDGET, path
        assert {s["path"].rsplit("/", 1)[1].split(".")[0] for s in statics} >= {"console", "live"}
        assert all(s["encoded"] < s["decoded"] for s in statics), statics
        assert total < ASSET_BUDGET, statics
        # The next page names the same hashed files: all come from the cache, none is fetched.
        assert again["statics"], again
        assert [s for s in again["statics"] if s["transfer"] > 0] == [], again["statics"]
    print("\n".join(report))
