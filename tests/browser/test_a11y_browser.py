"""Accessibility: axe-core (from npm, `make test-deps`) finds no serious or critical problem on
any console page, signed in as each role (platform admin, project admin, editor, viewer,
outsider) and signed out, in the light and the dark theme."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtimes.console.runtime_page import TABS
from tests.support.liveserver import LiveServer
from tests.support.manage import add_member

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
RUNTIME = "/p/nodus/runtimes/sft-qwen3"
# A job that compiles: the Parameters tab then shows its plan, offerings and phone summary.
A_JOB = (
    "job.model=Qwen%2FQwen3-0.6B&job.method=LoRA&job.data=hf%3A%2F%2Fdatasets%2Fnodus%2Falpaca"
    "&job.amount=300"
)
PAGES = (
    "/",
    "/?project=demo&task=SFT",
    *(f"{RUNTIME}/{tab}" for tab, _ in TABS),
    "/publish",
    f"{RUNTIME}/parameters?{A_JOB}",
    f"{RUNTIME}/yaml?managedFields=show",
    "/compare?a=nodus/sft-qwen3&b=nodus/dpo-trl",
    "/compare",
    "/accelerators",
    "/p/demo/jobs",
    "/account/tokens",
    "/projects",
    "/projects/demo/members",
    "/audit",
    "/docs/api",
    "/docs/errors",
    "/docs/errors/Invalid",
)
# What a role is refused (its 403 or 404 page is not what this checks).
EDITOR = "edna"  # an editor of demo, made by the `editor` fixture
REFUSED = {
    "alice": {"/audit"},
    EDITOR: {"/projects/demo/members", "/audit"},
    "bob": {"/publish", "/projects/demo/members", "/audit"},
    "charlie": {"/publish", "/projects/demo/members", "/p/demo/jobs", "/audit"},
}
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter(v => ["serious", "critical"].includes(v.impact))
    .map(v => `${v.id} (${v.impact}): ${v.help}; at ${v.nodes.slice(0, 3)
      .map(n => n.target.join(" ")).join(" | ")}`);
}"""


def severe_problems(page: Any) -> list[str]:
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated by the test runner, as DevTools would: the page's CSP, which admits no
        # inline script, does not apply to it.
        page.evaluate(AXE.read_text() + "\n;undefined")
    found: list[str] = page.evaluate(RUN_AXE)
    return found


@pytest.fixture(scope="module", autouse=True)
def axe_installed() -> None:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make test-deps` (npm ci)")


@pytest.fixture(scope="module")
def editor(daphne_server: LiveServer) -> str:
    add_member(daphne_server, EDITOR, "editor")
    return EDITOR


@pytest.mark.parametrize("who", ["root", "alice", EDITOR, "bob", "charlie"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_has_a_serious_or_critical_axe_finding(
    session_for: Any, editor: str, who: str, scheme: str
) -> None:
    s = session_for(who, color_scheme=scheme)
    problems = {}
    for path in PAGES:
        if path in REFUSED.get(who, ()):
            continue
        s.go(path)
        s.page.wait_for_load_state("networkidle")
        found = severe_problems(s.page)
        if found:
            problems[path] = found
    assert problems == {}, "\n".join(f"{p}: {'; '.join(f)}" for p, f in problems.items())


def test_the_sign_in_page_has_no_serious_or_critical_axe_finding(session_for: Any) -> None:
    s = session_for()
    s.go("/login")
    assert severe_problems(s.page) == []
