"""A job's page by role, and a dry run that predicts the controller, in a real browser: an editor
recompiles, edits as new and deletes (after a confirmation) their project's job, a viewer is
offered only "Edit as new", and the publish editor's dry run warns that the starter template's
registry is off the allow-list (an error for a managed runtime)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.api import GV, job_manifest

pytestmark = pytest.mark.browser

JOBS = f"{GV}/namespaces/demo/trainingjobs"


def a_job(s: Any, name: str) -> None:
    created = s.server.client("alice").post(
        JOBS, json=job_manifest(name, data="hf://datasets/nodus/actions", steps=240)
    )
    assert created.status_code == 201, created.text


def test_an_editor_recompiles_edits_as_new_and_deletes_a_job_after_confirming(
    session_for: Any,
) -> None:
    s = session_for("alice")
    a_job(s, "acted-on")
    page = s.go("/p/demo/jobs/acted-on")
    actions = page.locator(".job-actions")

    actions.get_by_role("button", name="Recompile").click()
    expect(page.locator("#messages, .toast").first).to_contain_text("compile again")
    job = s.server.client("alice").get(f"{JOBS}/acted-on").json()
    assert "nodus.dev/recompile" in job["metadata"]["annotations"]

    actions.get_by_role("link", name="Edit as new").click()
    expect(page).to_have_url(re.compile(r"/p/nodus/runtimes/sft-qwen3/parameters\?"))
    expect(page.locator("#job-data")).to_have_value("hf://datasets/nodus/actions")
    expect(page.locator("#job-amount")).to_have_value("240")
    expect(page.locator("#job-model")).to_have_value("Qwen/Qwen3-0.6B")
    s.shot("job-edit-as-new")

    page = s.go("/p/demo/jobs/acted-on")
    page.locator(".job-actions").get_by_role("link", name="Delete").click()
    expect(page.locator("h1")).to_have_text("Delete job acted-on?")
    page.get_by_role("link", name="Keep it").click()
    expect(page.locator("h1")).to_contain_text("acted-on")
    assert s.server.client("alice").get(f"{JOBS}/acted-on").status_code == 200

    page.locator(".job-actions").get_by_role("link", name="Delete").click()
    page.get_by_role("button", name="Delete the job").click()
    expect(page).to_have_url(re.compile(r"/p/demo/jobs$"))
    expect(page.locator("#messages, .toast").first).to_contain_text("Deleted job acted-on")
    expect(page.locator("#job-demo-acted-on")).to_have_count(0)
    assert s.server.client("alice").get(f"{JOBS}/acted-on").status_code == 404


def test_a_viewer_is_offered_only_edit_as_new(session_for: Any) -> None:
    a_job(session_for("alice"), "looked-at")
    page = session_for("bob").go("/p/demo/jobs/looked-at")
    actions = page.locator(".job-actions")
    expect(actions.get_by_role("link", name="Edit as new")).to_be_visible()
    expect(actions.get_by_role("button", name="Recompile")).to_have_count(0)
    expect(actions.get_by_role("link", name="Delete")).to_have_count(0)


def test_the_templates_dry_run_warns_of_its_registry_and_refuses_it_for_the_catalog(
    session_for: Any,
) -> None:
    s = session_for("root")
    page = s.go("/publish")
    feedback = page.locator("#publish-feedback")
    # The starter template, checked as it loads, into a project: taken, with the warning of
    # what the controller will do.
    expect(feedback).to_contain_text("Valid: the server accepts this manifest (dry run).")
    # The template warns of nothing else: the one warning is the one to act on.
    expect(feedback.locator(".notice.warn")).to_have_count(1)
    expect(feedback.locator(".notice.warn")).to_contain_text(
        "registry registry.example.com is not on the allow-list"
    )
    # Into the managed catalog the controller must verify it: refused, on spec.image.
    page.select_option("#publish-project", "nodus")
    expect(page.locator("#publish-verdict")).to_contain_text("The server rejects this manifest")
    expect(page.locator("#publish-causes")).to_contain_text("spec.image")
    expect(page.locator("#publish-causes")).to_contain_text("not on the allow-list")
    s.shot("publish-managed-registry")
