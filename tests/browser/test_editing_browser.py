"""Two people edit one runtime in two browsers: a stale tab's save never undoes the other's
change unless its user chooses so (a user once lost `team: changed-meanwhile`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import fill_manifest

pytestmark = pytest.mark.browser

GV = "/apis/nodus.dev/v1beta1"


def create(s: Any, name: str) -> None:
    body = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"team": "bars"}},
        "spec": {
            "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
        },
    }
    created = s.server.client("alice").post(f"{GV}/namespaces/demo/trainingruntimes", json=body)
    assert created.status_code == 201, created.text


def team(s: Any, name: str) -> str:
    got = s.server.client("alice").get(f"{GV}/namespaces/demo/trainingruntimes/{name}")
    return str(got.json()["metadata"]["labels"]["team"])


def set_team_in_the_other_browser(other: Any, name: str, value: str) -> None:
    page = other.go(f"/p/demo/runtimes/{name}/edit")
    editor = page.locator("#publish-manifest")
    fill_manifest(page, editor.input_value().replace("team: bars", f"team: {value}"))
    page.click("#publish-save")
    expect(page.locator("#review-changes")).to_contain_text("metadata.labels.team")
    expect(page.locator("#review-changes")).to_contain_text(value)
    page.click("#review-save")
    page.wait_for_url(re.compile(rf"/p/demo/runtimes/{name}/status$"))


def open_editor(s: Any, name: str) -> Page:
    page: Page = s.go(f"/p/demo/runtimes/{name}/edit")
    expect(page.locator("#publish-manifest")).to_have_value(re.compile(r"team: bars"))
    return page


def test_a_comment_only_edit_from_a_stale_tab_keeps_the_other_persons_change(
    session_for: Any,
) -> None:
    name = "two-tabs-comment"
    mine = session_for("alice")
    create(mine, name)
    page = open_editor(mine, name)
    set_team_in_the_other_browser(session_for("root"), name, "changed-meanwhile")

    editor = page.locator("#publish-manifest")
    fill_manifest(page, "# checked by alice\n" + editor.input_value())  # still says team: bars
    page.click("#publish-save")
    expect(page.locator("#conflict-summary")).to_be_visible()
    expect(page.locator("#conflict-others")).to_contain_text("changed-meanwhile")
    expect(page.locator("#conflict-yours")).to_contain_text("You changed no field")
    mine.shot("edit-conflict-comment-only")
    page.get_by_role("button", name="Re-apply my changes on the latest version").click()
    expect(page.locator("#review-nothing")).to_be_visible()
    assert team(mine, name) == "changed-meanwhile"


def test_a_same_field_conflict_is_settled_by_the_users_choice(session_for: Any) -> None:
    name = "two-tabs-conflict"
    mine = session_for("alice")
    create(mine, name)
    page = open_editor(mine, name)
    set_team_in_the_other_browser(session_for("root"), name, "changed-meanwhile")

    editor = page.locator("#publish-manifest")
    fill_manifest(page, editor.input_value().replace("team: bars", "team: foxes"))
    page.click("#publish-save")
    choice = page.locator('fieldset.field-conflict[data-path="metadata.labels.team"]')
    expect(choice.locator("legend")).to_have_text("metadata.labels.team")
    expect(choice.get_by_label("Yours: foxes")).to_be_visible()
    expect(choice.get_by_label("Theirs (the latest version): changed-meanwhile")).to_be_visible()
    expect(choice.get_by_label("The base (as you both started): bars")).to_be_visible()
    overwrite = page.locator("#conflict-overwrite")
    expect(overwrite).to_have_class(re.compile(r"\bdanger\b"))
    expect(page.locator("#overwrite-lost")).to_contain_text("changed-meanwhile")
    mine.shot("edit-conflict-choice")

    # No choice, no merge: the form asks for one (a required radio group).
    page.locator("#conflict-merge").click()
    expect(choice).to_be_visible()
    assert team(mine, name) == "changed-meanwhile"

    choice.get_by_label("Yours: foxes").check()
    page.locator("#conflict-merge").click()
    expect(page.locator("#review-note")).to_contain_text("re-applied on the latest version")
    changes = page.locator("#review-changes")
    expect(changes).to_contain_text("metadata.labels.team: changed-meanwhile")
    expect(changes).to_contain_text("foxes")
    assert team(mine, name) == "changed-meanwhile"  # shown, not yet written
    mine.shot("edit-review-merged")
    page.locator("#review-save").click()
    page.wait_for_url(re.compile(rf"/p/demo/runtimes/{name}/status$"))
    assert team(mine, name) == "foxes"
