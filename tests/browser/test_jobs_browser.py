"""TrainingJobs in a real browser: a job created from a runtime's Parameters tab appears, live,
on its project's Jobs page, open in another tab."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def a_valid_job(s: Any) -> Any:
    """sft-qwen3's Parameters tab filled in with a job that compiles; returns the page."""
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    page.select_option("#job-model", "Qwen/Qwen3-0.6B")
    page.select_option("#job-method", "LoRA")
    page.fill("#job-data", "hf://datasets/nodus/alpaca")
    page.fill("#job-amount", "300")
    expect(page.locator("#param-verdict")).to_have_text(
        re.compile("Valid: this job compiles"), timeout=10_000
    )
    return page


def test_a_job_created_from_the_parameters_tab_appears_live_on_the_jobs_page(
    session_for: Any,
) -> None:
    jobs = session_for("alice")
    jobs.go("/p/demo/jobs")
    jobs.wait_live()
    rows = jobs.page.locator("#job-rows tr")
    before = rows.count()

    s = session_for("alice")
    page = a_valid_job(s)
    expect(page.locator("#job-manifest")).to_contain_text("steps: 300", timeout=10_000)
    expect(page.locator("#job-manifest")).to_contain_text("namespace: demo")
    page.click("#create-job")
    result = page.locator("#create-job-result")
    expect(result).to_contain_text("Created job sft-qwen3-", timeout=10_000)
    name = re.search(r"Created job (\S+):", result.inner_text()).group(1)  # type: ignore[union-attr]
    s.shot("parameters-create-job")

    row = jobs.page.locator(f"#job-demo-{name}")
    expect(row).to_be_visible(timeout=10_000)
    expect(row.locator("td[data-label=Runtime]")).to_contain_text("sft-qwen3")
    expect(rows).to_have_count(before + 1)
    jobs.shot("jobs-live")
    result.locator("a", has_text="open it").click()
    expect(page.locator("h1")).to_contain_text(name)


def test_a_refused_job_says_why_what_to_do_and_the_request_id(session_for: Any) -> None:
    s = session_for("alice")
    page = a_valid_job(s)
    # The job the page sends is changed on its way into one the API refuses (no runtime): the
    # API's own answer comes back.
    refused = b'{"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingJob", "spec": {}}'
    page.route("**/trainingjobs", lambda route: route.continue_(post_data=refused))
    page.click("#create-job")
    result = page.locator("#create-job-result")
    expect(result).to_contain_text("Request id: ", timeout=10_000)
    assert re.search(r"Request id: [0-9a-f]{32}", result.inner_text())
    expect(result).to_have_class(re.compile(r"\bbad\b"))
    # The refusal this test caused on purpose is not a console error to report.
    s.errors[:] = [e for e in s.errors if "422" not in e]
