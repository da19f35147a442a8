"""The console under its Content-Security-Policy in a real browser, over HTTP and HTTPS.

Every page is visited and used (tabs through htmx, the live websocket, checks as you type) while
the page records each `securitypolicyviolation` event; none may occur. A control test proves the
policy is enforced, not only reported, and that the recorder sees violations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from runtimes.console.runtime_page import TABS
from tests.browser.conftest import fill_manifest
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

RECORDER = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(
    e.effectiveDirective + " blocked " + (e.blockedURI || "inline") + " in " + e.documentURI
  );
});
"""
RUNTIME = "/p/nodus/runtimes/sft-qwen3"


class Visit:
    """A signed-in page that keeps every CSP violation and console error it sees."""

    def __init__(self, page: Page, base: str) -> None:
        self.page = page
        self.base = base
        self.violations: list[str] = []
        self.errors: list[str] = []
        page.add_init_script(RECORDER)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def collect(self) -> None:
        """Moves what the current document recorded into `violations` (before it navigates)."""
        self.page.wait_for_timeout(100)  # violation events are dispatched as a task
        self.violations += self.page.evaluate("window.__violations.splice(0)")

    def go(self, path: str) -> Page:
        if self.page.url.startswith(self.base):
            self.collect()
        self.page.goto(self.base + path)
        return self.page

    def login(self, who: str) -> None:
        self.go("/login")
        self.page.fill("#id_username", who)
        self.page.fill("#id_password", f"{who}-pass")
        self.collect()
        self.page.click("button[type=submit]")
        self.page.wait_for_url(self.base + "/")


@pytest.fixture
def visit(browser: Browser, daphne_server: LiveServer) -> Iterator[Callable[[bool], Visit]]:
    contexts: list[Any] = []

    def make(tls: bool) -> Visit:
        context = browser.new_context(ignore_https_errors=tls)
        contexts.append(context)
        return Visit(context.new_page(), daphne_server.https_url if tls else daphne_server.url)

    yield make
    for context in contexts:
        context.close()


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_it_uses_every_console_page_without_a_policy_violation(
    visit: Callable[[bool], Visit], tls: bool
) -> None:
    v = visit(tls)
    v.login("alice")
    page = v.page
    # The live websocket connects under connect-src 'self' (ws: over HTTP, wss: over HTTPS).
    page.wait_for_selector('#live[data-state="live"]', timeout=10_000)
    page.locator("input[name=task][value=GRPO]").check()
    page.wait_for_url(f"{v.base}/?*task=GRPO*")
    expect(page.locator("#runtime-rows tr").first).to_be_visible()
    page.go_back()  # htmx restores the page from its history cache
    page.wait_for_url(f"{v.base}/")
    expect(page.locator("input[name=task][value=GRPO]")).not_to_be_checked()

    v.go(f"{RUNTIME}/overview")
    for tab, label in TABS[1:]:
        # Boosted tab links swap #main through htmx, as a person clicking through them does.
        page.locator("#main").get_by_role("link", name=label, exact=True).first.click()
        page.wait_for_url(f"{v.base}{RUNTIME}/{tab}")
    v.go(f"{RUNTIME}/estimates")
    expect(page.locator("svg.chart")).to_be_visible()
    v.go(f"{RUNTIME}/parameters")
    page.get_by_label("Learning rate").fill("5")
    expect(page.locator("#err-sf-p_2e_learningRate")).not_to_be_empty()

    page = v.go("/publish")
    editor = page.locator("#publish-manifest")
    fill_manifest(page, editor.input_value().replace("task: SFT", "task: Juggling"))
    expect(page.locator("#publish-causes")).to_contain_text("spec.task")

    for path in ("/account/tokens", "/projects", "/projects/demo/members", "/docs/api"):
        v.go(path)
        expect(page.locator("h1")).to_be_visible()
    v.go("/docs/errors/Invalid")
    v.go("/no-such-page")
    v.collect()
    assert v.violations == []
    assert [e for e in v.errors if "status of 404" not in e] == []  # /no-such-page is one


def test_it_enforces_the_policy_and_the_recorder_sees_it(
    visit: Callable[[bool], Visit],
) -> None:
    v = visit(False)
    v.login("alice")
    v.page.evaluate(
        """document.getElementById("main").insertAdjacentHTML("beforeend",
        '<img src="data:," onload="window.__ran = 1"><b style="color: red">x</b>')"""
    )
    v.collect()
    assert v.page.evaluate("window.__ran") is None
    assert sorted(d.split(" ", 1)[0] for d in v.violations) == ["script-src-attr", "style-src-attr"]
