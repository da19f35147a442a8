"""Finding things and seeing failures, in a real browser: filter chips, the skip link and the
Tab count to the first result, "/" to search, sortable headers, facet counts that predict the
result, toasts for network, server, websocket and clipboard failures, confirmation before
revoking, and the message a write leaves."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, Route, WebSocketRoute, expect

from tests.browser.test_console_browser import GV, manifest
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

# demo's runtimes: two SFT, one GRPO, so counts and orders are known.
DEMO = {"find-alpha": "SFT", "find-bravo": "GRPO", "find-charlie": "SFT"}


@pytest.fixture(scope="module", autouse=True)
def demo_runtimes(daphne_server: LiveServer) -> None:
    api = daphne_server.client("alice")
    for name, task in DEMO.items():
        answer = api.post(f"{GV}/namespaces/demo/trainingruntimes", json=manifest(name, task=task))
        assert answer.status_code == 201, answer.text


def expect_failures(session: Any, *patterns: str) -> None:
    """Drops the console errors and failed responses a test caused on purpose."""
    session.errors[:] = [e for e in session.errors if not any(p in e for p in patterns)]


def focused(page: Page) -> str:
    """The focused element: its id, or its text."""
    return str(
        page.evaluate(
            "() => document.activeElement.id || document.activeElement.textContent.trim()"
        )
    )


def test_it_shows_filter_chips_and_clears_them(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    page.locator("input[name=task][value=SFT]").check()
    page.wait_for_url(re.compile(r"task=SFT"))
    chips = page.locator("#filter-chips li")
    expect(chips.locator("> span")).to_have_text(["Project: demo", "Task: SFT"])
    expect(page.locator("#runtime-rows tr")).to_have_count(2)
    s.shot("catalog-chips", full_page=False)
    page.get_by_role("link", name="Clear filter Task: SFT").click()
    page.wait_for_url(lambda url: "task=" not in url)
    expect(chips.locator("> span")).to_have_text(["Project: demo"])
    expect(page.locator("#runtime-rows tr")).to_have_count(3)
    expect(page.locator("input[name=task][value=SFT]")).not_to_be_checked()
    # Focus stays on the chips, not lost to the page.
    page.wait_for_function("() => document.activeElement.classList.contains('chip-clear')")
    page.get_by_role("link", name="Clear all filters").first.click()
    page.wait_for_url(lambda url: "project=" not in url)
    expect(page.locator("#filter-chips")).to_have_count(0)
    expect(page.locator("#runtime-rows tr").nth(3)).to_be_visible()


def test_it_reaches_the_first_result_within_five_tabs_with_the_skip_link(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page = s.go("/")
    first_result = page.locator("#runtime-rows tr").first.locator("th a")
    expect(first_result).to_be_visible()
    page.keyboard.press("Tab")
    assert focused(page) == "skip-link"
    expect(page.locator("#skip-link")).to_have_text("Skip to results")
    expect(page.locator("#skip-link")).to_be_in_viewport()
    page.keyboard.press("Enter")
    tabs = 1
    while tabs < 5 and not first_result.evaluate("a => a === document.activeElement"):
        page.keyboard.press("Tab")
        tabs += 1
    assert first_result.evaluate("a => a === document.activeElement"), focused(page)
    assert tabs <= 5


def test_it_updates_the_skip_link_on_boosted_navigation(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/account/tokens")
    expect(page.locator("#skip-link")).to_have_text("Skip to content")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalog").click()
    expect(page.locator("#runtime-rows tr").first).to_be_visible()
    expect(page.locator("#skip-link")).to_have_text("Skip to results")
    expect(page.locator("#skip-link")).to_have_attribute("href", "#runtime-rows")


def test_it_focuses_search_with_slash_but_not_while_typing(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    page.locator("h1").click()
    page.keyboard.press("/")
    expect(page.locator("#id_q")).to_be_focused()
    expect(page.locator("#id_q")).to_have_value("")
    page.keyboard.type("find/a")
    expect(page.locator("#id_q")).to_have_value("find/a")
    page.wait_for_url(re.compile(r"q=find%2Fa"))


def test_it_sorts_by_clicking_a_header_and_says_so_with_aria_sort(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    name = page.locator("th", has=page.locator("#sort-name"))
    task = page.locator("th", has=page.locator("#sort-task"))
    expect(name).to_have_attribute("aria-sort", "ascending")
    expect(page.locator("#runtime-rows th[scope=row] a")).to_have_text(sorted(DEMO))
    page.locator("#sort-task").click()
    page.wait_for_url(re.compile(r"sort=task"))
    expect(task).to_have_attribute("aria-sort", "ascending")
    expect(name).not_to_have_attribute("aria-sort", re.compile(".*"))
    expect(page.locator("#sort-task")).to_be_focused()
    by_task = sorted(DEMO, key=lambda n: (DEMO[n], n))
    expect(page.locator("#runtime-rows th[scope=row] a")).to_have_text(by_task)
    page.locator("#sort-task").click()
    page.wait_for_url(re.compile(r"sort=-task"))
    expect(task).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#runtime-rows th[scope=row] a")).to_have_text(list(reversed(by_task)))
    expect(page.locator("#id_sort")).to_have_value("-task")


def test_it_counts_what_each_filter_choice_would_leave(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    counts = {
        v: int(page.locator(f"label:has(input[name=task][value={v}]) .count").inner_text())
        for v in ("SFT", "GRPO")
    }
    assert counts == {"SFT": 2, "GRPO": 1}
    # A task unused in demo is not offered, so no choice leads to an empty page.
    expect(page.locator("input[name=task][value=DPO]")).to_have_count(0)
    # The project facet counts every project: its own choice does not narrow it.
    nodus = page.locator("label:has(input[name=project][value=nodus]) .count")
    assert int(nodus.inner_text()) > 0
    page.locator("input[name=task][value=GRPO]").check()
    page.wait_for_url(re.compile(r"task=GRPO"))
    expect(page.locator("#runtime-rows tr")).to_have_count(counts["GRPO"])
    # The other task still says what adding it would bring.
    expect(page.locator("label:has(input[name=task][value=SFT]) .count")).to_have_text("2")


def test_it_shows_a_toast_when_the_server_cannot_be_reached(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    page.route(re.compile(r".*/\?.*task=GRPO.*"), lambda route: route.abort())
    page.locator("input[name=task][value=GRPO]").check()
    toast = page.locator("#notices .toast.error")
    expect(toast).to_contain_text("Could not reach the server")
    toast.get_by_role("button", name="Dismiss").click()
    expect(toast).to_have_count(0)
    expect_failures(s, "net::ERR_FAILED", "htmx:sendError", "htmx:afterRequest")


def test_it_shows_the_request_id_of_a_server_error(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/?project=demo")
    seen: list[str] = []

    def fail(route: Route) -> None:
        # The server's real answer (and its request id), turned into a failure.
        answer = route.fetch()
        seen.append(answer.headers["x-request-id"])
        route.fulfill(status=500, headers=answer.headers, body="")

    page.route(re.compile(r".*/\?.*task=SFT.*"), fail)
    page.locator("input[name=task][value=SFT]").check()
    toast = page.locator("#notices .toast.error")
    expect(toast).to_contain_text("The server failed (HTTP 500)")
    assert seen
    expect(toast.locator(".request-id code")).to_have_text(seen[-1])
    s.shot("toast-server-error", full_page=False)
    expect(page.locator(".toasts")).to_have_attribute("role", "status")
    expect_failures(s, "500 ", "htmx:responseError", "status of 500", "htmx:afterRequest")


# Every toast the page shows, even one gone again before a test looks.
RECORD_TOASTS = """
window.__toasts = [];
new MutationObserver(function (changes) {
  changes.forEach(function (change) {
    change.addedNodes.forEach(function (node) {
      if (node.classList && node.classList.contains("toast")) {
        window.__toasts.push(node.textContent);
      }
    });
  });
}).observe(document, { childList: true, subtree: true });
"""


def test_it_shows_a_toast_when_live_updates_are_lost_and_takes_it_back(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page = s.page
    page.add_init_script(RECORD_TOASTS)
    sockets: list[WebSocketRoute] = []

    def through(ws: WebSocketRoute) -> None:
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket(re.compile(r".*/ws/console$"), through)
    s.go("/")
    s.wait_live()
    # The connection drops as when the server restarts (1012: htmx reconnects after it).
    sockets[-1].close(code=1012, reason="restarting")
    page.wait_for_function("() => window.__toasts.some(t => t.includes('Live updates lost'))")
    s.wait_live()  # htmx reconnects by itself
    expect(page.locator('#notices [data-key="live"]')).to_have_count(0)
    assert len(sockets) >= 2


def test_it_shows_a_toast_when_the_clipboard_is_refused(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/account/tokens")
    # Playwright grants permissions but cannot deny one: the browser's own protocol can.
    target = page.context.new_cdp_session(page).send("Target.getTargetInfo")
    browser = page.context.browser
    assert browser is not None
    browser.new_browser_cdp_session().send(
        "Browser.setPermission",
        {
            "permission": {"name": "clipboard-write"},
            "setting": "denied",
            "origin": s.server.url,
            "browserContextId": target["targetInfo"]["browserContextId"],
        },
    )
    page.get_by_label("Name").fill("clipboard")
    page.get_by_role("button", name="Create token").click()
    page.get_by_role("button", name="Copy token").click()
    toast = page.locator('#notices .toast[data-key="clipboard"]')
    expect(toast).to_contain_text("refused to copy")
    # The token is selected instead, ready to copy by hand.
    token = page.locator("#new-token").inner_text()
    assert page.evaluate("() => String(window.getSelection())").strip() == token.strip()


def test_it_asks_before_revoking_and_says_what_changed(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/account/tokens")
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#messages")).to_contain_text("Token ci created")
    row = page.locator("tr", has=page.locator("th", has_text=re.compile(r"^ci$")))
    row.get_by_role("link", name="Revoke ci…").click()
    expect(page.get_by_role("heading", name="Revoke token ci?")).to_be_visible()
    page.get_by_role("link", name="Keep it").click()
    expect(row.locator(".badge")).to_have_text("active")
    row.get_by_role("link", name="Revoke ci…").click()
    page.get_by_role("button", name="Revoke ci").click()
    expect(page.locator("#messages .toast.success")).to_contain_text("Token ci revoked")
    expect(row.locator(".badge")).to_have_text("revoked")
    expect(page.locator(".toasts")).to_have_attribute("aria-live", "polite")
