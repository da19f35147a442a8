"""Every console page, as each role sees it, fits a phone: no sideways scroll at 360, 390 and 768
CSS pixels (`document.documentElement.scrollWidth <= window.innerWidth`).

The pages come from the console's URL conf: each named route is either visited (with its
arguments taken from the seeded catalog, a job made for the purpose, the error reasons and the
runtime tabs) or listed in `NOT_PAGES` with the reason it is not a page, so a new route without
one or the other fails `test_it_knows_every_console_route`. A failure names the page, the width,
the role and the widest element that sticks out of the viewport (outside any scrolling box).
"""

from __future__ import annotations

import pytest
from django.urls import URLPattern
from playwright.sync_api import Browser

from runtimes.apimachinery.errors import REASONS
from runtimes.console.runtime_page import TABS
from runtimes.console.urls import urlpatterns
from tests.browser.conftest import Session
from tests.support.api import GV, job_manifest
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

WIDTHS = (360, 390, 768)
# Routes that answer no page of their own: form posts, downloads and checks.
NOT_PAGES = {
    "logout": "POST only: signs out and redirects to the sign-in page",
    "runtime-yaml": "a YAML download",
    "runtime-parameters-check": "POST only: the Parameters tab's htmx check",
    "publish-check": "POST only: the publish editor's htmx dry run",
    "kubeconfig": "POST only: a kubeconfig download",
    "oidc-login": "a redirect to the identity provider (404 unless OIDC is configured)",
    "oidc-callback": "the identity provider's redirect back: signs in, then redirects",
    "project-pick": "POST only: the header's project picker remembers a project, then redirects",
    "job-recompile": "POST only: recompiles a job against its runtime, then redirects",
}
JOB = "fits-a-phone"
# A job that compiles: the Parameters tab then shows its plan, offerings and phone summary.
A_JOB = (
    "job.model=Qwen%2FQwen3-0.6B&job.method=LoRA&job.data=hf%3A%2F%2Fdatasets%2Fnodus%2Falpaca"
    "&job.amount=300"
)
# Pages reached by a link on another page (their URL holds an id): "follow:PAGE|SELECTOR".
FOLLOW = "follow:"

# The widest element that reaches past the viewport's right edge and is not inside a box that
# scrolls or clips it (such a box keeps it off the page's own scroll width).
OVERFLOW = """
() => {
  const width = window.innerWidth;
  const scrollWidth = document.documentElement.scrollWidth;
  if (scrollWidth <= width) return null;
  const describe = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 5; e = e.parentElement) {
      let part = e.tagName.toLowerCase();
      if (e.id) part += "#" + e.id;
      else if (e.classList.length) part += "." + [...e.classList].join(".");
      parts.unshift(part);
    }
    return parts.join(" > ");
  };
  // Whether a box that scrolls or clips holds `el` (or, with `self`, its text): only boxes on
  // its chain of containing blocks do (a positioned element escapes static ancestors).
  const clipped = (el, self) => {
    let position = self ? "static" : getComputedStyle(el).position;
    for (let e = self ? el : el.parentElement; e && e !== document.body; e = e.parentElement) {
      const style = getComputedStyle(e);
      const contains =
        position === "fixed" ? false
        : position === "absolute" ? style.position !== "static"
        : true;
      if (!contains) continue;
      if (style.overflowX !== "visible") return true;
      position = style.position;
    }
    return false;
  };
  let widest = null;
  const consider = (el, box, what, self) => {
    if (box.right <= width + 0.5 || box.width === 0 || clipped(el, self)) return;
    if (!widest || box.width > widest.width) {
      widest = {element: what, width: Math.round(box.width), right: Math.round(box.right)};
    }
  };
  for (const el of document.body.querySelectorAll("*")) {
    consider(el, el.getBoundingClientRect(), describe(el));
  }
  // Text that runs out of its element (a word too long to wrap) sticks out on its own.
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    if (!node.parentElement || !node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const text = JSON.stringify(node.textContent.trim().slice(0, 40));
    consider(node.parentElement, range.getBoundingClientRect(),
             `text ${text} in ${describe(node.parentElement)}`, true);
  }
  return {scrollWidth, widest};
}
"""


def named_routes() -> set[str]:
    return {p.name for p in urlpatterns if isinstance(p, URLPattern) and p.name}


def pages(server: LiveServer, role: str | None) -> dict[str, list[str]]:
    """Each route's pages for `role` (None: signed out), by route name."""
    if role is None:
        return {
            "login": ["/login"],
            "docs-api": ["/docs/api"],
            "docs-errors": ["/docs/errors"],
            "docs-error": [f"/docs/errors/{reason}" for reason in sorted(REASONS)],
        }
    with server.client("root") as client:
        listed = client.get(f"{GV}/namespaces/nodus/trainingruntimes").json()["items"]
    seeded = sorted(item["metadata"]["name"] for item in listed)
    assert seeded, "the seed made no runtimes"
    # The platform admin sees every runtime with every action; the others one runtime, as a
    # project admin (alice) and a viewer (bob) see it.
    runtimes = seeded if role == "root" else ["sft-qwen3"]
    found = {
        "catalog": ["/", "/?task=SFT"],
        "compare": [
            "/compare?a=nodus/sft-qwen3&b=nodus/dpo-trl",
            "/compare?a=nodus/sft-qwen3",
            "/compare",
        ],
        "accelerators": ["/accelerators"],
        "token-revoke": [f"{FOLLOW}/account/tokens|a[href$='/revoke']"],
        "runtime-default": [f"/p/nodus/runtimes/{runtimes[0]}"],
        "runtime": [
            *(f"/p/nodus/runtimes/{n}/{tab}" for n in runtimes for tab, _ in TABS),
            f"/p/nodus/runtimes/sft-qwen3/parameters?{A_JOB}",
            "/p/nodus/runtimes/sft-qwen3/yaml?managedFields=show",
        ],
        "jobs": ["/p/demo/jobs"],
        "job": [f"/p/demo/jobs/{JOB}"],
        "tokens": ["/account/tokens"],
        "projects": ["/projects"],
    }
    if role in {"root", "alice"}:
        found["job-delete"] = [f"/p/demo/jobs/{JOB}/delete"]  # a viewer gets 404
        found["publish-new"] = ["/publish"]
        found["members"] = ["/projects/demo/members"]
        found["member-remove"] = [f"{FOLLOW}/projects/demo/members|a[href$='/remove']"]
    if role == "root":
        found["audit"] = ["/audit", "/audit?verb=get"]
        found["publish-edit"] = [f"/p/nodus/runtimes/{runtimes[0]}/edit"]
        found["publish-delete"] = [f"/p/nodus/runtimes/{runtimes[0]}/delete"]
    return found


@pytest.fixture(scope="module")
def job(daphne_server: LiveServer) -> str:
    """A job in project demo, so the job page has something to show."""
    manifest = job_manifest(JOB, steps=300)
    with daphne_server.client("alice") as client:
        response = client.post(f"{GV}/namespaces/demo/trainingjobs", json=manifest)
        assert response.status_code == 201, response.text
    return JOB


def test_it_knows_every_console_route(daphne_server: LiveServer, job: str) -> None:
    visited = set().union(*(pages(daphne_server, r) for r in (None, "root", "alice", "bob")))
    assert named_routes() == visited | set(NOT_PAGES)
    assert not visited & set(NOT_PAGES)


@pytest.mark.parametrize("role", [None, "root", "alice", "bob"], ids=str)
def test_no_page_scrolls_sideways_on_a_phone(
    browser: Browser, daphne_server: LiveServer, job: str, role: str | None
) -> None:
    context = browser.new_context(viewport={"width": WIDTHS[-1], "height": 800})
    session = Session(context.new_page(), daphne_server)
    try:
        if role:
            session.login(role)
        problems = []
        for route, paths in sorted(pages(daphne_server, role).items()):
            for path in paths:
                if path.startswith(FOLLOW):
                    source, selector = path[len(FOLLOW) :].split("|")
                    link = session.go(source).locator(selector).first.get_attribute("href")
                    assert link, f"no {selector} on {source} as {role}"
                    path = link
                page = session.go(path)
                assert not (role and page.url.startswith(f"{daphne_server.url}/login")), path
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 800})
                    found = page.evaluate(OVERFLOW)
                    if found:
                        problems.append(
                            f"{path} ({route}) at {width} px as {role or 'anonymous'}: "
                            f"scrollWidth {found['scrollWidth']}, widest {found['widest']}"
                        )
                page.set_viewport_size({"width": WIDTHS[-1], "height": 800})
        assert problems == [], "\n".join(problems)
        assert session.errors == []
    finally:
        context.close()
