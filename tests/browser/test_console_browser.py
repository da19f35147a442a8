"""The console in a real browser: filters and deep links, live rows, the parameters form,
publishing, escaping, and what a viewer is offered."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import fill_manifest
from tests.support.watch_live import manifest

pytestmark = pytest.mark.browser

GV = "/apis/nodus.dev/v1beta1"


def test_it_filters_and_reproduces_the_view_from_a_deep_link(session_for: Any) -> None:
    s = session_for("alice")
    page = s.page
    expect(page.locator("#runtime-rows tr").first).to_be_visible()
    s.shot("catalog")
    page.locator("input[name=task][value=GRPO]").check()
    page.wait_for_url(re.compile(r"task=GRPO"))
    rows = page.locator("#runtime-rows tr")
    expect(rows.first).to_be_visible()
    expect(
        page.locator("#runtime-rows tr td[data-label=Task]").filter(has_not_text="GRPO")
    ).to_have_count(0)
    grpo_count = rows.count()
    url = page.url
    other = session_for("alice")
    other.page.goto(url)
    expect(other.page.locator("#runtime-rows tr")).to_have_count(grpo_count)
    expect(other.page.locator("input[name=task][value=GRPO]")).to_be_checked()
    page.go_back()
    page.wait_for_url(re.compile(r"/$"))
    expect(page.locator("#runtime-rows tr")).not_to_have_count(grpo_count)


def test_it_shows_a_runtime_created_through_the_api_live(session_for: Any) -> None:
    s = session_for("alice")
    s.go("/?project=demo")
    s.wait_live()
    api = s.server.client("alice")
    created = api.post(f"{GV}/namespaces/demo/trainingruntimes", json=manifest("live-from-api"))
    assert created.status_code == 201, created.text
    row = s.page.locator("#tr-demo-live-from-api")
    expect(row).to_be_visible(timeout=10_000)
    expect(row.locator(".badge.phase-pending")).to_be_visible()
    generation = created.json()["metadata"]["generation"]
    status = s.server.client("root").patch(
        f"{GV}/namespaces/demo/trainingruntimes/live-from-api/status",
        json={"status": {"phase": "Ready", "observedGeneration": generation}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert status.status_code == 200, status.text
    expect(row.locator(".badge.phase-ready")).to_be_visible(timeout=10_000)
    s.shot("catalog-live")
    assert api.delete(f"{GV}/namespaces/demo/trainingruntimes/live-from-api").status_code == 200
    expect(row).to_have_count(0, timeout=10_000)


def test_it_validates_parameters_at_the_field_and_shows_the_manifest(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    field = page.get_by_label("Learning rate")
    field.fill("5")
    error = page.locator("#err-sf-p_2e_learningRate")
    expect(error).to_have_text(re.compile("Must be 1 or less"))
    s.shot("parameters-error")
    field.fill("0.0001")
    expect(error).to_have_text("")
    expect(page.locator("#job-manifest")).to_contain_text("learningRate: 0.0001")
    expect(page.locator("#job-manifest")).not_to_contain_text("epochs")
    expect(page.locator("#param-verdict")).to_contain_text("valid", ignore_case=True)
    s.shot("parameters")


def test_it_publishes_after_fixing_a_validation_error(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go("/publish")
    editor = page.locator("#publish-manifest")
    text = editor.input_value().replace("my-runtime", "browser-published")
    fill_manifest(page, text.replace("task: SFT", "task: Juggling"))
    expect(page.locator("#publish-causes")).to_contain_text("spec.task")
    s.shot("publish-error")
    fill_manifest(page, text)
    expect(page.locator("#publish-verdict")).to_contain_text("Valid")
    page.click("#publish-save")
    page.wait_for_url(re.compile(r"/p/demo/runtimes/browser-published/status$"))
    expect(page.locator("#runtime-header .badge.phase-pending")).to_be_visible()
    s.wait_live()
    generation = 1
    s.server.client("root").patch(
        f"{GV}/namespaces/demo/trainingruntimes/browser-published/status",
        json={"status": {"phase": "Ready", "observedGeneration": generation}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    expect(page.locator("#runtime-header .badge.phase-ready")).to_be_visible(timeout=10_000)
    s.shot("status")


def test_it_keeps_a_script_in_a_schema_description_inert(session_for: Any) -> None:
    s = session_for("alice")
    evil = manifest(
        "xss-runtime",
        parameters={
            "type": "object",
            "properties": {
                "x": {
                    "type": "string",
                    "title": "<img src=x onerror=window.__xss=2>",
                    "description": "<script>window.__xss=1</script>",
                }
            },
        },
    )
    evil["metadata"]["annotations"] = {"nodus.dev/description": "<script>window.__xss=3</script>"}
    response = s.server.client("alice").post(f"{GV}/namespaces/demo/trainingruntimes", json=evil)
    assert response.status_code == 201, response.text
    page = s.go("/p/demo/runtimes/xss-runtime/parameters")
    expect(page.locator(".help", has_text="__xss=1").first).to_contain_text(
        "<script>window.__xss=1</script>"
    )
    s.go("/?project=demo")
    expect(s.page.locator("#tr-demo-xss-runtime")).to_contain_text("<script>")
    assert s.page.evaluate("window.__xss") is None


def test_it_offers_a_viewer_no_edit_actions(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/")
    expect(page.get_by_role("link", name="Publish a runtime")).to_have_count(0)
    expect(page.locator("nav >> text=Publish")).to_have_count(0)
    page = s.go("/p/nodus/runtimes/sft-qwen3/overview")
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete")).to_have_count(0)


def test_it_screenshots_the_main_pages(session_for: Any) -> None:
    s = session_for("alice")
    for tab in ("overview", "presets", "estimates", "status", "yaml"):
        s.go(
            f"/p/nodus/runtimes/grpo-vllm/{tab}"
            if tab == "overview"
            else f"/p/nodus/runtimes/sft-qwen3/{tab}"
        )
        s.shot(f"runtime-{tab}")
    for path, name in (
        ("/account/tokens", "tokens"),
        ("/docs/api", "docs-api"),
        ("/docs/errors/Invalid", "docs-error"),
        ("/projects/demo/members", "members"),
    ):
        s.go(path)
        s.shot(name)
    dark = session_for("alice", color_scheme="dark")
    dark.go("/")
    dark.shot("catalog-dark", full_page=False)
    dark.go("/p/nodus/runtimes/sft-qwen3/parameters")
    dark.shot("parameters-dark", full_page=False)
    phone = session_for("alice", viewport={"width": 390, "height": 844})
    phone.go("/")
    phone.shot("catalog-phone", full_page=False)


def test_it_can_be_driven_by_keyboard_with_visible_focus(session_for: Any) -> None:
    s = session_for("alice")
    page = s.page
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert "Skip to results" in focused
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
