"""Editing a runtime: a field-level review before each write, a signed base, and conflicts
settled by a three-way merge (re-apply), a per-field choice, or an overwrite the user asks for."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import runtime_manifest
from tests.support.console import client_for, form_fields, put_runtime

pytestmark = pytest.mark.django_db

URL = "/p/demo/runtimes/contested/edit"


@pytest.fixture
def alice(actors: dict[str, Any]) -> Client:
    manifest = runtime_manifest("contested", launcher="Plain")
    manifest["metadata"]["labels"] = {"team": "bars", "tier": "gold"}
    put_runtime("demo", manifest)
    return client_for(actors["alice"])


def form(page: str, form_id: str) -> str:
    start = page.index(f'<form id="{form_id}"')
    return page[start : page.index("</form>", start) + len("</form>")]


def submit(client: Client, page: str, form_id: str, **changes: Any) -> Any:
    return client.post(URL, form_fields(form(page, form_id), **changes))


def stored() -> dict[str, Any]:
    return store.get(TRAINING_RUNTIMES, "demo", "contested")


def someone_else_sets(**labels: str) -> None:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"].update(labels)
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", "contested", change)


def editor_text(page: str) -> str:
    return form_fields(form(page, "publish-form"))["manifest"]


def test_it_shows_the_field_changes_before_it_writes(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    text = editor_text(page).replace("launcher: Plain", "launcher: Torchrun")
    review = submit(alice, page, "publish-form", manifest=text).content.decode()
    assert "These fields change" in review
    assert 'spec.launcher</span>: <code class="was">Plain</code>' in review
    assert '<code class="now">Torchrun</code>' in review
    assert stored()["spec"]["launcher"] == "Plain"  # nothing written by the review
    response = submit(alice, review, "review-form", action="save")
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runtimes/contested/status"
    assert stored()["spec"]["launcher"] == "Torchrun"


def test_it_keeps_a_change_made_meanwhile_when_a_comment_only_edit_is_reapplied(
    alice: Client,
) -> None:
    page = alice.get(URL).content.decode()
    assert "team: bars" in editor_text(page)
    someone_else_sets(team="changed-meanwhile")
    text = "# reviewed by alice\n" + editor_text(page)
    conflict = submit(alice, page, "publish-form", manifest=text).content.decode()
    assert "Someone changed" in conflict
    assert "Re-apply my changes on the latest version" in conflict
    assert "You changed no field" in conflict
    review = submit(alice, conflict, "merge-form").content.decode()
    assert "No field changes" in review
    assert 'id="review-save"' not in review
    assert stored()["metadata"]["labels"]["team"] == "changed-meanwhile"


def test_it_reapplies_only_the_fields_this_tab_changed(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    someone_else_sets(team="changed-meanwhile")
    text = editor_text(page).replace("launcher: Plain", "launcher: Torchrun")
    conflict = submit(alice, page, "publish-form", manifest=text).content.decode()
    review = submit(alice, conflict, "merge-form").content.decode()
    assert "spec.launcher" in review
    assert "metadata.labels.team" not in review  # theirs stays, so it is no change
    assert submit(alice, review, "review-form", action="save").status_code == 302
    obj = stored()
    assert obj["spec"]["launcher"] == "Torchrun"
    assert obj["metadata"]["labels"]["team"] == "changed-meanwhile"


def test_it_asks_which_value_a_field_both_sides_changed_takes(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    someone_else_sets(team="changed-meanwhile")
    text = editor_text(page).replace("team: bars", "team: foxes")
    conflict = submit(alice, page, "publish-form", manifest=text).content.decode()
    choice = form(conflict, "merge-form")
    assert '<legend class="mono">metadata.labels.team</legend>' in choice
    for side, value in (("mine", "foxes"), ("theirs", "changed-meanwhile"), ("base", "bars")):
        assert f'name="pick:metadata.labels.team" value="{side}" required>' in choice
        assert f"<code>{value}</code>" in choice
    # Without a choice nothing moves on: the same question again.
    again = submit(alice, conflict, "merge-form").content.decode()
    assert 'name="pick:metadata.labels.team"' in again
    assert "Pick one value for each field both of you changed" in again
    assert stored()["metadata"]["labels"]["team"] == "changed-meanwhile"
    review = submit(
        alice, conflict, "merge-form", **{"pick:metadata.labels.team": "mine"}
    ).content.decode()
    assert "Your changes were re-applied on the latest version" in review
    assert '<code class="was">changed-meanwhile</code>' in review
    assert submit(alice, review, "review-form", action="save").status_code == 302
    assert stored()["metadata"]["labels"]["team"] == "foxes"


def test_it_overwrites_only_when_asked_and_names_what_that_undoes(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    someone_else_sets(team="changed-meanwhile")
    text = editor_text(page).replace("launcher: Plain", "launcher: Torchrun")
    conflict = submit(alice, page, "publish-form", manifest=text).content.decode()
    overwrite = form(conflict, "overwrite-form")
    assert "These changes made by others will be lost" in overwrite
    assert "metadata.labels.team" in overwrite
    assert 'class="danger" id="conflict-overwrite"' in overwrite
    review = submit(alice, conflict, "overwrite-form").content.decode()
    assert "You are overwriting the latest version" in review
    assert stored()["metadata"]["labels"]["team"] == "changed-meanwhile"
    assert submit(alice, review, "review-form", action="save").status_code == 302
    obj = stored()
    assert (obj["metadata"]["labels"]["team"], obj["spec"]["launcher"]) == ("bars", "Torchrun")


def test_it_asks_again_when_the_runtime_changes_while_choosing(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    someone_else_sets(team="changed-meanwhile")
    text = editor_text(page).replace("team: bars", "team: foxes")
    conflict = submit(alice, page, "publish-form", manifest=text).content.decode()
    someone_else_sets(team="changed-again")
    again = submit(
        alice, conflict, "merge-form", **{"pick:metadata.labels.team": "mine"}
    ).content.decode()
    assert "changed again while you were choosing" in again
    assert "<code>changed-again</code>" in again
    overwrite = submit(alice, conflict, "overwrite-form").content.decode()
    assert "changed again while you were choosing" in overwrite
    assert stored()["metadata"]["labels"]["team"] == "changed-again"


def test_it_conflicts_when_a_write_lands_between_review_and_save(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    text = editor_text(page).replace("launcher: Plain", "launcher: Torchrun")
    review = submit(alice, page, "publish-form", manifest=text).content.decode()
    someone_else_sets(team="changed-meanwhile")
    conflict = submit(alice, review, "review-form", action="save").content.decode()
    assert "Someone changed" in conflict
    assert stored()["spec"]["launcher"] == "Plain"


def test_it_takes_a_status_write_meanwhile_for_no_conflict(alice: Client) -> None:
    page = alice.get(URL).content.decode()

    def verdict(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {"phase": "Ready", "observedGeneration": obj["metadata"]["generation"]}
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", "contested", verdict, subresource="status")
    text = editor_text(page).replace("launcher: Plain", "launcher: Torchrun")
    review = submit(alice, page, "publish-form", manifest=text).content.decode()
    assert "These fields change" in review
    assert submit(alice, review, "review-form", action="save").status_code == 302
    assert stored()["spec"]["launcher"] == "Torchrun"


@pytest.mark.parametrize("forge", ["altered", "missing", "another-runtime"])
def test_it_refuses_a_base_it_never_served(alice: Client, forge: str) -> None:
    put_runtime("demo", runtime_manifest("other"))
    page = alice.get(URL).content.decode()
    someone_else_sets(team="changed-meanwhile")
    fields = form_fields(form(page, "publish-form"))
    text = fields["manifest"].replace("launcher: Plain", "launcher: Torchrun")
    if forge == "altered":
        base = fields["base"][:-3] + ("AAA" if not fields["base"].endswith("AAA") else "BBB")
    elif forge == "missing":
        base = ""
    else:
        other = alice.get("/p/demo/runtimes/other/edit").content.decode()
        base = form_fields(form(other, "publish-form"))["base"]
    for action in ("review", "save", "merge", "overwrite"):
        answer = alice.post(URL, {"manifest": text, "base": base, "action": action})
        assert "no longer knows which version it started from" in answer.content.decode()
    obj = stored()
    assert (obj["metadata"]["labels"]["team"], obj["spec"]["launcher"]) == (
        "changed-meanwhile",
        "Plain",
    )


def test_it_dry_runs_against_the_version_the_editor_started_from(alice: Client) -> None:
    page = alice.get(URL).content.decode()
    fields = form_fields(form(page, "publish-form"))
    text = fields["manifest"].replace("launcher: Plain", "launcher: Torchrun")
    check = {"project": "demo", "original": "contested", "manifest": text, "base": fields["base"]}
    body = alice.post("/publish/check", check).content.decode()
    assert '<span class="del">-  launcher: Plain</span>' in body
    assert '<span class="add">+  launcher: Torchrun</span>' in body
    someone_else_sets(team="changed-meanwhile")
    body = alice.post("/publish/check", check).content.decode()
    assert "Someone changed this runtime after you opened it" in body
