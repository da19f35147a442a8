"""Publishing: dry-run checks with causes at their lines, save, conflicts, delete, who may."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from runtimes.console.manifests import STARTER, line_of
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import runtime_manifest
from tests.support.console import client_for, form_fields, put_runtime

pytestmark = pytest.mark.django_db


def test_it_offers_publishing_only_to_editors(actors: dict[str, Any]) -> None:
    assert client_for(actors["bob"]).get("/publish").status_code == 403
    assert client_for(actors["charlie"]).get("/publish").status_code == 403
    page = client_for(actors["alice"]).get("/publish").content.decode()
    # The publish form's own project menu (the header's picker lists what she reads).
    menu = page.split('id="publish-project"', 1)[1].split("</select>", 1)[0]
    assert '<option value="demo" selected>demo</option>' in menu
    assert 'value="nodus"' not in menu


def test_it_lets_platform_admins_publish_to_nodus(actors: dict[str, Any]) -> None:
    from runtimes.storage.models import Project

    Project.objects.get_or_create(name="nodus")
    page = client_for(actors["root"]).get("/publish").content.decode()
    assert '<option value="nodus"' in page


def test_it_shows_each_cause_beside_its_line(actors: dict[str, Any]) -> None:
    text = STARTER.replace("task: SFT", "task: Juggling")
    body = (
        client_for(actors["alice"])
        .post("/publish/check", {"project": "demo", "manifest": text})
        .content.decode()
    )
    line = text.splitlines().index("  task: Juggling") + 1
    beside = f'>line {line}</button> <span class="field">spec.task</span>'
    assert beside in body
    assert "Unsupported value" in body
    assert not store.list_objects(TRAINING_RUNTIMES, "demo")[0]  # a dry run stores nothing


def test_it_reports_yaml_syntax_errors_with_their_line(actors: dict[str, Any]) -> None:
    body = (
        client_for(actors["alice"])
        .post("/publish/check", {"project": "demo", "manifest": "spec:\n  task: [unclosed\n"})
        .content.decode()
    )
    assert "not valid YAML" in body
    assert "line 3" in body or "line 2" in body


def test_it_accepts_a_valid_manifest_in_the_dry_run(actors: dict[str, Any]) -> None:
    body = (
        client_for(actors["alice"])
        .post("/publish/check", {"project": "demo", "manifest": STARTER})
        .content.decode()
    )
    assert "Valid: the server accepts this manifest (dry run)." in body


def test_the_templates_dry_run_warns_that_its_registry_is_not_allowed(
    actors: dict[str, Any], settings: Any
) -> None:
    settings.NODUS_REGISTRY_ALLOW = ""
    body = (
        client_for(actors["alice"])
        .post("/publish/check", {"project": "demo", "manifest": STARTER})
        .content.decode()
    )
    assert "registry registry.example.com is not on the allow-list" in body
    settings.NODUS_REGISTRY_ALLOW = "registry.example.com"
    body = (
        client_for(actors["alice"])
        .post("/publish/check", {"project": "demo", "manifest": STARTER})
        .content.decode()
    )
    assert "allow-list" not in body


def test_it_publishes_and_lands_on_the_status_tab(actors: dict[str, Any]) -> None:
    response = client_for(actors["alice"]).post(
        "/publish", {"project": "demo", "manifest": STARTER}
    )
    assert response.status_code == 302
    assert response["Location"] == "/p/demo/runtimes/my-runtime/status"
    stored = store.get(TRAINING_RUNTIMES, "demo", "my-runtime")
    assert stored["status"]["phase"] == "Pending"


def test_it_says_what_a_publish_changed(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    created = client.post("/publish", {"project": "demo", "manifest": STARTER}, follow=True)
    assert "Published my-runtime revision 1 in demo." in created.content.decode()
    url = "/p/demo/runtimes/my-runtime/edit"
    page = client.get(url).content.decode()
    fields = form_fields(_form(page, "publish-form"))
    assert "launcher: Accelerate" in fields["manifest"]
    fields["manifest"] = fields["manifest"].replace("launcher: Accelerate", "launcher: Torchrun")
    review = client.post(url, fields).content.decode()
    saved = client.post(url, form_fields(_form(review, "review-form"), action="save"), follow=True)
    assert "Published my-runtime revision 2 in demo." in saved.content.decode()
    # The message is shown once: the next page does not repeat it.
    assert "Published my-runtime" not in client.get("/").content.decode()


def _form(page: str, form_id: str) -> str:
    begin = page.index(f'<form id="{form_id}"')
    return page[begin : page.index("</form>", begin) + len("</form>")]


def test_it_records_the_publishing_user_as_the_field_manager(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    client.post("/publish", {"project": "demo", "manifest": STARTER})
    [entry] = store.get(TRAINING_RUNTIMES, "demo", "my-runtime")["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("nodus-console:alice", "Update")
    assert "f:image" in entry["fieldsV1"]["f:spec"]


def test_it_refuses_publishing_to_a_project_the_user_cannot_write(actors: dict[str, Any]) -> None:
    from runtimes.storage.models import Project

    Project.objects.get_or_create(name="nodus")
    response = client_for(actors["alice"]).post(
        "/publish", {"project": "nodus", "manifest": STARTER}
    )
    assert response.status_code == 200
    assert b"you may not publish to project" in response.content
    assert not store.list_objects(TRAINING_RUNTIMES, "nodus")[0]


def test_it_deletes_after_confirmation(actors: dict[str, Any]) -> None:
    put_runtime("demo", runtime_manifest("doomed"))
    client = client_for(actors["alice"])
    page = client.get("/p/demo/runtimes/doomed/delete")
    assert b"cannot be undone" in page.content
    assert store.get(TRAINING_RUNTIMES, "demo", "doomed")
    rv = store.get(TRAINING_RUNTIMES, "demo", "doomed")["metadata"]["resourceVersion"]
    response = client.post("/p/demo/runtimes/doomed/delete", {"resourceVersion": rv})
    assert response["Location"] == "/"
    assert not store.list_objects(TRAINING_RUNTIMES, "demo")[0]
    assert "Deleted runtime doomed from project demo." in client.get("/").content.decode()


def test_it_keeps_viewers_out_of_edit_and_delete(actors: dict[str, Any]) -> None:
    put_runtime("demo", runtime_manifest("kept"))
    bob = client_for(actors["bob"])
    assert bob.get("/p/demo/runtimes/kept/edit").status_code == 403
    assert bob.post("/p/demo/runtimes/kept/delete").status_code == 404
    assert store.get(TRAINING_RUNTIMES, "demo", "kept")


def test_it_finds_the_line_of_nested_fields() -> None:
    text = "spec:\n  presets:\n  - model: a\n    method: Full\n  - model: b\n    method: Bogus\n"
    assert line_of(text, "spec.presets[1].method") == 6
    assert line_of(text, "spec.presets[1].missing") == 5


def test_it_checks_who_may_make_an_owner_reference_blocking(actors: dict[str, Any]) -> None:
    from runtimes.registry.kinds import ACCELERATORS

    gpu = store.create(ACCELERATORS, None, {"metadata": {"name": "owner-gpu"}, "spec": {}}).object
    manifest = runtime_manifest("owned")
    manifest["metadata"]["ownerReferences"] = [
        {
            "apiVersion": gpu["apiVersion"],
            "kind": gpu["kind"],
            "name": "owner-gpu",
            "uid": gpu["metadata"]["uid"],
            "blockOwnerDeletion": True,
        }
    ]
    text = yaml.safe_dump(manifest)
    response = client_for(actors["alice"]).post("/publish", {"project": "demo", "manifest": text})
    assert b"can&#x27;t set finalizers on" in response.content
    assert not store.list_objects(TRAINING_RUNTIMES, "demo")[0]
