"""The project a user works in: picked in the header, remembered; Jobs follow it."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.storage.models import Project
from tests.support.console import client_for

pytestmark = pytest.mark.django_db


def test_a_viewer_works_in_the_project_they_belong_to_not_the_catalogs(actors: Any) -> None:
    page = client_for(actors["bob"]).get("/").content.decode()
    assert 'href="/p/demo/jobs">Jobs</a>' in page


def test_the_header_picks_a_project_and_jobs_follow_it(actors: Any) -> None:
    Project.objects.get_or_create(name="nodus")
    root = client_for(actors["root"])
    answer = root.post("/project", {"project": "nodus", "next": "/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/"
    page = root.get("/").content.decode()
    assert 'href="/p/nodus/jobs">Jobs</a>' in page
    assert '<option value="nodus" selected>nodus</option>' in page


def test_a_project_the_user_cannot_read_is_not_picked(actors: Any) -> None:
    Project.objects.get_or_create(name="blue")
    bob = client_for(actors["bob"])
    bob.post("/project", {"project": "blue", "next": "/"})
    assert 'href="/p/demo/jobs">Jobs</a>' in bob.get("/").content.decode()
    assert "blue" not in bob.get("/").content.decode()


def test_the_pick_goes_back_only_to_this_site(actors: Any) -> None:
    answer = client_for(actors["alice"]).post(
        "/project", {"project": "demo", "next": "https://evil.example/"}
    )
    assert answer["Location"] == "/p/demo/jobs"


def _job(api: Any) -> dict[str, Any]:
    from tests.support.console import add_job

    return add_job(api, "tune", parameters={"learningRate": 0.0001})


def test_an_editor_recompiles_and_deletes_a_job_after_a_confirmation(
    catalog_data: Any, api: Any
) -> None:
    from runtimes.registry.kinds import TRAINING_JOBS
    from runtimes.registry.trainingjob.schema import RECOMPILE_ANNOTATION
    from runtimes.storage import store

    _job(api)
    alice = client_for(catalog_data["alice"])
    page = alice.get("/p/demo/jobs/tune").content.decode()
    assert "/p/demo/jobs/tune/recompile" in page
    assert alice.post("/p/demo/jobs/tune/recompile").status_code == 302
    annotations = store.get(TRAINING_JOBS, "demo", "tune")["metadata"]["annotations"]
    assert RECOMPILE_ANNOTATION in annotations
    confirm = alice.get("/p/demo/jobs/tune/delete")
    assert "Delete job tune?" in confirm.content.decode()
    assert store.get(TRAINING_JOBS, "demo", "tune")  # asking changed nothing
    assert alice.post("/p/demo/jobs/tune/delete").status_code == 302
    assert "tune" not in [
        o["metadata"]["name"] for o in store.list_objects(TRAINING_JOBS, "demo")[0]
    ]


def test_a_viewer_gets_no_job_actions_but_edit_as_new(catalog_data: Any, api: Any) -> None:
    _job(api)
    bob = client_for(catalog_data["bob"])
    page = bob.get("/p/demo/jobs/tune").content.decode()
    assert "/recompile" not in page
    assert "/delete" not in page
    assert bob.post("/p/demo/jobs/tune/recompile").status_code == 404
    assert bob.post("/p/demo/jobs/tune/delete").status_code == 404


def test_edit_as_new_opens_the_runtimes_form_filled_from_the_job(
    catalog_data: Any, api: Any
) -> None:
    _job(api)
    page = client_for(catalog_data["alice"]).get("/p/demo/jobs/tune").content.decode()
    href = page.split('class="button" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert href.startswith("/p/nodus/runtimes/sft-qwen3/parameters?")
    form = client_for(catalog_data["alice"]).get(href).content.decode()
    assert 'value="hf://datasets/nodus/alpaca"' in form
    assert "0.0001" in form
