"""States that read at a glance, in a real browser, as the role that meets each: badges that
differ in their computed style, why a runtime failed or a job did not compile, managedFields on
request, the catalog's hidden models by keyboard, the empty compare page, and conditions that
wrap as whole words on a phone."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.api import GV, job_manifest, runtime_manifest
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser
AT = "2026-12-01T10:00:00Z"
REFUSED = "registry registry.example.com is not on the allow-list"
STYLE = """el => { const s = getComputedStyle(el);
  return [s.color, s.backgroundColor, s.borderTopStyle, s.borderTopColor].join(" | "); }"""


def controller_says(server: LiveServer, path: str, status: dict[str, Any]) -> None:
    """Writes `status` as the controller would (the live server runs none): for the current
    generation, through the status subresource, as the platform admin."""
    with server.client("root") as root:
        generation = root.get(path).json()["metadata"]["generation"]
        answer = root.patch(
            f"{path}/status",
            json={"status": {**status, "observedGeneration": generation}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert answer.status_code == 200, answer.text


def condition(kind: str, value: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": AT,
    }


def a_job(server: LiveServer, name: str, phase: str, *conditions: dict[str, str]) -> str:
    path = f"{GV}/namespaces/demo/trainingjobs/{name}"
    with server.client("alice") as alice:
        created = alice.post(f"{GV}/namespaces/demo/trainingjobs", json=job_manifest(name))
        assert created.status_code == 201, created.text
    controller_says(server, path, {"phase": phase, "conditions": list(conditions)})
    return path


def test_an_invalid_jobs_badge_differs_from_a_compiled_ones_and_its_page_says_why(
    session_for: Any,
) -> None:
    ready = condition("RuntimeReady", "True", "RuntimeReady", "runtime nodus/sft-qwen3 is Ready")
    cause = "does not compile: spec.model: Qwen/Qwen3-0.6B has no preset any more"
    a_job(s_server := session_for("bob").server, "glance-ok", "Compiled", ready)
    a_job(
        s_server,
        "glance-bad",
        "Invalid",
        ready,
        condition("Compiled", "False", "CompileFailed", cause),
    )
    s = session_for("bob")
    page = s.go("/p/demo/jobs")
    good = page.locator("#job-demo-glance-ok .badge.phase")
    bad = page.locator("#job-demo-glance-bad .badge.phase")
    expect(good).to_contain_text("Compiled")
    expect(bad).to_contain_text("Invalid")
    assert good.evaluate(STYLE) != bad.evaluate(STYLE)
    assert good.locator(".phase-icon").inner_text() != bad.locator(".phase-icon").inner_text()

    expect(page.locator("#job-demo-glance-bad th a")).to_have_attribute(
        "href", "/p/demo/jobs/glance-bad"
    )
    page = s.go("/p/demo/jobs/glance-bad")
    problems = page.locator("#job-problems")
    expect(problems).to_contain_text("This job does not compile")
    expect(problems).to_contain_text(cause)
    expect(problems).to_contain_text("Fix: ")
    expect(page.locator("main")).not_to_contain_text("not compiled yet")
    s.shot("job-invalid")


def test_a_failed_runtime_says_why_and_offers_no_job_to_its_author(session_for: Any) -> None:
    s = session_for("alice")
    path = f"{GV}/namespaces/demo/trainingruntimes/refused-image"
    with s.server.client("alice") as alice:
        created = alice.post(
            f"{GV}/namespaces/demo/trainingruntimes", json=runtime_manifest("refused-image")
        )
        assert created.status_code == 201, created.text
    controller_says(
        s.server,
        path,
        {
            "phase": "Failed",
            "conditions": [condition("Verified", "False", "RegistryRefused", REFUSED)],
        },
    )
    page = s.go("/p/demo/runtimes/refused-image/overview")
    problems = page.locator("#runtime-problems")
    expect(problems).to_contain_text("jobs will not compile until it is Ready")
    expect(problems).to_contain_text(REFUSED)
    expect(problems).to_contain_text(
        "Fix: Push the image to a registry on the platform's allow-list"
    )
    s.shot("runtime-failed-overview")
    page.locator("#runtime-tabs").get_by_role("link", name="Parameters").click()
    expect(page.locator("#param-verdict")).to_contain_text(
        "jobs will not compile until it is Ready"
    )
    expect(page.locator("#param-verdict")).not_to_contain_text("valid")
    expect(page.locator("#create-job")).to_have_count(0)


def test_the_yaml_tab_hides_managed_fields_behind_a_toggle(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/p/nodus/runtimes/sft-qwen3/yaml")
    manifest = page.locator("#manifest")
    expect(manifest).to_contain_text("kind: TrainingRuntime")
    expect(manifest).not_to_contain_text("managedFields")
    page.locator("#managed-fields-toggle").click()
    expect(manifest).to_contain_text("managedFields:")
    expect(page.locator("#managed-fields-toggle")).to_have_text("Hide managedFields")


def test_the_catalogs_hidden_models_open_by_keyboard(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/")
    more = page.locator("details.more-models").first
    hidden = more.locator(".chip").first
    expect(hidden).to_be_hidden()
    more.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(hidden).to_be_visible()


def test_compare_with_nothing_chosen_is_an_empty_state_with_two_pickers(session_for: Any) -> None:
    s = session_for("bob")
    response = s.page.goto(s.server.url + "/compare")
    assert response is not None
    assert response.status == 200
    page = s.page
    expect(page.locator("#compare-empty")).to_contain_text("Choose two runtimes")
    page.fill("#compare-a", "nodus/sft-qwen3")
    page.fill("#compare-b", "nodus/dpo-trl")
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("#compare-heading")).to_contain_text("nodus/sft-qwen3")


def test_conditions_wrap_as_whole_words_on_a_phone(session_for: Any) -> None:
    ready = condition("RuntimeReady", "True", "RuntimeReady", "runtime nodus/sft-qwen3 is Ready")
    s = session_for("bob", viewport={"width": 390, "height": 800})
    a_job(s.server, "phone-conditions", "Pending", ready)
    page = s.go("/p/demo/jobs/phone-conditions")
    header = page.locator("table.conditions tbody th").first
    expect(header).to_have_text("RuntimeReady")
    lines = header.evaluate(
        "el => { const r = document.createRange(); r.selectNodeContents(el);"
        " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }"
    )
    assert lines == 1
    s.shot("job-conditions-phone")


def test_jobs_are_newest_first_with_ages_and_the_time_on_hover(session_for: Any) -> None:
    s = session_for("bob")
    ready = condition("RuntimeReady", "True", "RuntimeReady", "ok")
    a_job(s.server, "older-one", "Pending", ready)
    a_job(s.server, "newer-one", "Pending", ready)
    page = s.go("/p/demo/jobs")
    names = page.locator("#job-rows tr[id] th a").all_inner_texts()
    assert names.index("newer-one") < names.index("older-one")
    age = page.locator("#job-demo-newer-one time")
    expect(age).to_have_text(re.compile(r"^\d+[smhd]$"))
    expect(age).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
