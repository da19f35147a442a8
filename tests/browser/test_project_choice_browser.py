"""The project is the user's choice: the header's picker, Jobs landing in the user's own project,
and Create job going where the user picked, a fresh name each press (never a 409)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_jobs_browser import a_valid_job

pytestmark = pytest.mark.browser


def created_name(page: Any) -> str:
    result = page.locator("#create-job-result")
    expect(result).to_contain_text("Created job sft-qwen3-", timeout=10_000)
    found = re.search(r"Created job (\S+):", result.inner_text())
    assert found
    return found.group(1)


def test_a_viewer_of_demo_lands_on_demos_jobs_and_is_told_why_there_is_no_create(
    session_for: Any,
) -> None:
    s = session_for("bob")
    page = s.go("/")
    page.click("nav >> text=Jobs")
    expect(page).to_have_url(re.compile(r"/p/demo/jobs$"))
    page = s.go("/p/nodus/runtimes/sft-qwen3/parameters")
    expect(page.locator("#create-job")).to_have_count(0)
    expect(page.locator("#create-job-none")).to_contain_text("create jobs in no project")


def test_an_editor_creates_a_managed_runtimes_job_in_their_project_twice_without_a_409(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page = a_valid_job(s)
    expect(page.locator("#job-manifest")).to_contain_text("namespace: demo")
    page.click("#create-job")
    first = created_name(page)
    page.locator("#create-job-result").evaluate("node => { node.textContent = ''; }")
    page.click("#create-job")
    second = created_name(page)
    assert first != second
    assert "409" not in " ".join(s.errors)
    page = s.go("/p/demo/jobs")
    for name in (first, second):
        expect(page.locator(f"#job-demo-{name}")).to_be_visible()


def test_the_admin_picks_a_project_in_the_header_then_creates_where_the_form_says(
    session_for: Any,
) -> None:
    s = session_for("root")
    page = s.go("/")
    page.select_option("#project-pick", "nodus")
    with page.expect_navigation():
        page.click(".project-picker button")
    expect(page.locator("#project-pick")).to_have_value("nodus")
    # The catalog's "mine" view follows the pick.
    page = s.go("/")
    page.click("#catalog-mine")
    expect(page).to_have_url(re.compile(r"[?&]project=nodus"))
    projects = page.locator("#runtime-rows td[data-label=Project]")
    expect(projects.first).to_have_text("nodus")
    assert set(projects.all_inner_texts()) == {"nodus"}
    page.click("nav >> text=Jobs")
    expect(page).to_have_url(re.compile(r"/p/nodus/jobs$"))
    page = a_valid_job(s)
    expect(page.locator("#job-project")).to_have_value("nodus")
    page.select_option("#job-project", "demo")
    expect(page.locator("#job-manifest")).to_contain_text("namespace: demo", timeout=10_000)
    page.click("#create-job")
    name = created_name(page)
    link = page.locator("#create-job-result a", has_text="open it")
    expect(link).to_have_attribute("href", re.compile(rf"/p/demo/jobs/{name}$"))
