"""Compare and History in a real browser: from a runtime's page to the two side by side, and
from a revision in its history to what changed since."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

GV = "/apis/nodus.dev/v1beta1"


def test_it_compares_a_runtime_with_another_chosen_on_the_page(session_for: Any) -> None:
    s = session_for("bob")
    page = s.go("/p/nodus/runtimes/sft-qwen3/overview")
    page.get_by_role("link", name="Compare").click()
    page.wait_for_url(re.compile(r"/compare\?a=nodus/sft-qwen3"))
    page.get_by_label("Second").fill("nodus/dpo-trl")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"b=nodus%2Fdpo-trl"))
    expect(page.locator("#compare-heading")).to_contain_text("nodus/dpo-trl as it is now")
    task = page.locator("section.compare-section").first.locator("tr", has_text="task").first
    expect(task).to_have_class(re.compile("differs"))
    expect(task).to_contain_text("SFT")
    expect(task).to_contain_text("DPO")
    all_rows = page.locator("table.compare tbody tr").count()
    page.get_by_label("Only rows that differ").check()
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"only=diff"))
    expect(page.locator("table.compare tbody tr:not(.differs)")).to_have_count(0)
    assert page.locator("table.compare tbody tr").count() < all_rows
    s.shot("compare")


def test_history_links_a_revision_to_what_changed_since(session_for: Any) -> None:
    s = session_for("alice")
    api = s.server.client("alice")
    path = f"{GV}/namespaces/demo/trainingruntimes"
    created = api.post(
        path,
        json={
            "apiVersion": "nodus.dev/v1beta1",
            "kind": "TrainingRuntime",
            "metadata": {"name": "with-history"},
            "spec": {
                "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
                "task": "SFT",
                "command": ["python", "-m", "trainer"],
            },
        },
    )
    assert created.status_code == 201, created.text
    patched = api.patch(
        f"{path}/with-history?fieldManager=tuning-script",
        content=b'{"spec": {"launcher": "Torchrun"}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    page = s.go("/p/demo/runtimes/with-history/history")
    newest = page.locator("li.history-entry").first
    expect(newest).to_contain_text("tuning-script")
    expect(newest.locator("tr", has_text="spec.launcher")).to_contain_text("Torchrun")
    # The newest revision is the runtime as it is now: nothing to compare it with.
    expect(newest).to_contain_text("current")
    expect(newest.get_by_role("link", name="compare with now")).to_have_count(0)
    page.locator("li.history-entry").last.get_by_role("link", name="compare with now").click()
    launcher = page.locator("tr.differs", has_text="launcher")
    expect(launcher).to_contain_text("Plain")
    expect(launcher).to_contain_text("Torchrun")
