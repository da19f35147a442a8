"""Playwright (sync) against a live daphne: Debian's Chromium, one browser per session.

Every page records console errors and uncaught exceptions; a test fails if any appear.
Screenshots go to test-artifacts/screenshots/ (gitignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.liveserver import LiveServer

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--headless",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


class Session:
    """A signed-in page plus the errors its console reported."""

    def __init__(self, page: Page, server: LiveServer) -> None:
        self.page = page
        self.server = server
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on(
            "response",
            lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )

    def go(self, path: str) -> Page:
        self.page.goto(self.server.url + path)
        return self.page

    def login(self, who: str) -> Session:
        self.go("/login")
        self.page.fill("#id_username", who)
        self.page.fill("#id_password", f"{who}-pass")
        self.page.click("button[type=submit]")
        self.page.wait_for_url(self.server.url + "/")
        return self

    def wait_live(self) -> None:
        self.page.wait_for_selector('#live[data-state="live"]', timeout=10_000)

    def shot(self, name: str, full_page: bool = True) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        # caret="initial": Playwright hides the caret by setting a style on every input and leaves
        # style="" behind, which htmx then copies or restores from history: a CSP violation the
        # page itself never causes.
        self.page.screenshot(path=str(path), full_page=full_page, caret="initial")
        return path


@pytest.fixture
def session_for(
    browser: Browser,
    daphne_server: LiveServer,
) -> Iterator[Any]:
    opened: list[tuple[Any, Session]] = []

    def make(
        who: str | None = None, color_scheme: str = "light", viewport: dict[str, int] | None = None
    ) -> Session:
        context = browser.new_context(
            color_scheme=color_scheme,  # type: ignore[arg-type]
            viewport=viewport or {"width": 1400, "height": 900},
        )
        session = Session(context.new_page(), daphne_server)
        opened.append((context, session))
        if who:
            session.login(who)
        return session

    yield make
    problems = [e for _, s in opened for e in s.errors]
    for context, _ in opened:
        context.close()
    assert problems == [], f"browser console errors: {problems}"


def fill_manifest(page: Page, text: str) -> None:
    """Sets the publish editor's text from a script, as another tool would: the text area's
    value and an "input" event, which the code editor follows (tests/browser/test_editor_browser
    types into the code editor itself)."""
    manifest = page.locator("#publish-manifest")
    manifest.evaluate(
        "(area, text) => { area.value = text;"
        " area.dispatchEvent(new Event('input', {bubbles: true})); }",
        text,
    )
    code = page.locator("#publish-manifest-editor .cm-content")
    if code.count():
        expect(code).to_contain_text(text.splitlines()[-1].strip())


def result_counts(page: Page) -> tuple[int, int]:
    """A live results block's "N of M ..." line: what the filters leave, and the total."""
    found = re.search(r"(\d+) of (\d+)", page.locator("#result-count").inner_text())
    assert found, "no result count"
    return int(found.group(1)), int(found.group(2))


def set_phase(server: LiveServer, path: str, phase: str) -> None:
    """Sets the phase of the object at `path` (an API path) as the controller would: a phase
    counts only for the generation it observed."""
    root = server.client("root")
    generation = root.get(path).json()["metadata"]["generation"]
    answer = root.patch(
        f"{path}/status",
        json={"status": {"phase": phase, "observedGeneration": generation}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status_code == 200, answer.text
