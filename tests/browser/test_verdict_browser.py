"""One verdict on the Parameters tab: the summary is the form's parse errors plus the API's own
dry-run causes, each once; while there is any, Create job is refused and the preview, which
keeps what was typed, says it is not valid."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import expect

from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

JOBS = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs"


def test_an_invalid_form_cannot_be_submitted_and_its_summary_is_the_apis_dry_run(
    session_for: Any, daphne_server: LiveServer
) -> None:
    s = session_for("alice")
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    page.select_option("#job-method", "LoRA")
    page.fill("#job-amount", "ten")
    page.fill("#sf-p_2e_learningRate", "abc")
    page.fill("#sf-p_2e_epochs", "-1")
    page.click("#param-form button[name=_submit]")
    summary = page.locator("#error-summary li")
    expect(page.locator("#error-summary")).to_be_visible(timeout=10_000)
    expect(page.locator("#job-manifest")).to_contain_text("learningRate: abc")
    expect(page.locator("#job-manifest")).to_contain_text("steps: ten")
    expect(page.locator("#manifest-verdict")).to_contain_text("the API would refuse")

    # The API's answer to the job the form could read (the typed text left out).
    shown = yaml.safe_load(page.locator("#job-manifest").inner_text())
    del shown["spec"]["parameters"]["learningRate"], shown["spec"]["steps"]
    shown["metadata"] = {"generateName": "sft-qwen3-"}
    headers = {"Authorization": f"Bearer {daphne_server.tokens['alice']}"}
    answer = httpx.post(
        f"{daphne_server.url}{JOBS}?dryRun=All", json=shown, headers=headers, timeout=10
    )
    assert answer.status_code == 422, answer.text
    causes = {c["field"] for c in answer.json()["details"]["causes"]}
    assert "spec.model" in causes
    texts = summary.all_inner_texts()
    assert len(texts) == len(causes) + 2, (texts, causes)  # plus the two that did not read
    assert sum(t.startswith("Learning rate:") for t in texts) == 1
    assert sum(t.startswith("Model:") for t in texts) == 1

    # Refused while any problem stands: the button and the sticky summary's are disabled.
    before = httpx.get(f"{daphne_server.url}{JOBS}", headers=headers).json()["items"]
    expect(page.locator("#create-job")).to_be_disabled()
    expect(page.locator("#plan-summary button")).to_be_disabled()
    page.locator("#create-job").dispatch_event("click")
    assert httpx.get(f"{daphne_server.url}{JOBS}", headers=headers).json()["items"] == before

    # Put right, the same form is valid and offers Create job.
    page.select_option("#job-model", "Qwen/Qwen3-0.6B")
    page.select_option("#job-method", "LoRA")
    page.fill("#job-data", "hf://datasets/nodus/alpaca")
    page.fill("#job-amount", "300")
    page.fill("#sf-p_2e_learningRate", "0.0002")
    page.fill("#sf-p_2e_epochs", "1")
    expect(page.locator("#param-verdict")).to_have_text("Valid: this job compiles", timeout=10_000)
    expect(page.locator("#create-job")).to_be_enabled()
    expect(page.locator("#manifest-verdict")).to_have_count(0)
