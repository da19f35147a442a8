"""The catalog page: who sees what, facets with counts, search, sort, paging, deep links."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.support.api import runtime_manifest
from tests.support.console import client_for, put_runtime, row_ids

pytestmark = pytest.mark.django_db

FACET_COUNT = r'value="{}"[^>]*>\s*<span class="facet-name">{}</span> <span class="count">{}<'


def test_it_redirects_anonymous_users_to_login() -> None:
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login")


def test_it_signs_in_with_a_password_and_out_again(actors: dict[str, Any]) -> None:
    client = Client()
    page = client.get("/login")
    assert b'name="csrfmiddlewaretoken"' in page.content
    response = client.post("/login", {"username": "alice", "password": "alice-pass"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    client.post("/logout")
    assert client.get("/").status_code == 302


def test_it_rejects_a_wrong_password(actors: dict[str, Any]) -> None:
    response = Client().post("/login", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


def test_it_shows_alice_her_project_and_the_managed_catalog(catalog_data: Any) -> None:
    body = client_for(catalog_data["alice"]).get("/").content.decode()
    ids = row_ids(body)
    assert "tr-demo-sft-demo" in ids
    assert "tr-demo-eval-demo" in ids
    assert "tr-nodus-sft-qwen3" in ids
    assert "tr-secret-hidden-runtime" not in ids


def test_it_shows_charlie_only_the_managed_catalog(catalog_data: Any) -> None:
    ids = row_ids(client_for(catalog_data["charlie"]).get("/").content.decode())
    assert ids
    assert all(i.startswith("tr-nodus-") for i in ids)


def test_it_shows_root_every_project(catalog_data: Any) -> None:
    ids = row_ids(client_for(catalog_data["root"]).get("/").content.decode())
    assert "tr-secret-hidden-runtime" in ids


def test_it_filters_by_project_and_counts_the_other_facets(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    body = client.get("/?project=demo").content.decode()
    assert sorted(row_ids(body)) == ["tr-demo-eval-demo", "tr-demo-sft-demo"]
    # The project facet still counts every project (its own filter does not apply to it) ...
    assert re.search(
        r'value="nodus"[^>]*>\s*<span class="facet-name">nodus</span> <span class="count">\d+', body
    )
    # ... while the task facet counts only demo's runtimes.
    assert re.search(
        r'value="SFT"[^>]*>\s*<span class="facet-name">SFT</span> <span class="count">1<', body
    )


def test_it_combines_facets_with_and_and_values_with_or(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    ids = row_ids(client.get("/?project=demo&task=SFT&task=Evaluate").content.decode())
    assert sorted(ids) == ["tr-demo-eval-demo", "tr-demo-sft-demo"]
    ids = row_ids(client.get("/?project=demo&task=SFT&phase=Pending").content.decode())
    assert ids == []


def test_it_filters_by_accelerator_family_and_model(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    ids = row_ids(client.get("/?project=demo&family=H100").content.decode())
    assert ids == ["tr-demo-sft-demo"]
    ids = row_ids(client.get("/?model=Qwen/Qwen3-0.6B&project=demo").content.decode())
    assert ids == ["tr-demo-sft-demo"]


def test_it_searches_free_text_across_name_and_models(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    assert row_ids(client.get("/?q=eval-demo").content.decode()) == ["tr-demo-eval-demo"]
    ids = row_ids(client.get("/?q=qwen3-0.6b demo").content.decode())
    assert "tr-demo-sft-demo" in ids


def test_it_ignores_unknown_choices_instead_of_failing(catalog_data: Any) -> None:
    response = client_for(catalog_data["alice"]).get("/?task=Juggling&sort=bogus&page=zz")
    assert response.status_code == 200
    assert "tr-demo-sft-demo" in row_ids(response.content.decode())


def test_it_sorts_by_fastest_estimate(catalog_data: Any) -> None:
    body = client_for(catalog_data["alice"]).get("/?sort=fastest").content.decode()
    ids = row_ids(body)
    # Runtimes without any measured time sort last.
    assert ids.index("tr-demo-sft-demo") < ids.index("tr-demo-eval-demo")


def test_it_pages_long_lists(actors: dict[str, Any]) -> None:
    for i in range(55):
        put_runtime("demo", runtime_manifest(f"rt-{i:02d}"))
    client = client_for(actors["alice"])
    first = row_ids(client.get("/?project=demo").content.decode())
    second = row_ids(client.get("/?project=demo&page=2").content.decode())
    assert len(first) == 50
    assert len(second) == 5
    assert not set(first) & set(second)


def test_it_returns_only_the_results_for_htmx_filter_requests(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    response = client.get("/?project=demo", headers={"HX-Request": "true"})
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results"')
    assert "<html" not in body
    assert "HX-Request" in response["Vary"]
    boosted = client.get("/?project=demo", headers={"HX-Request": "true", "HX-Boosted": "true"})
    assert b"<html" in boosted.content


def test_it_escapes_runtime_authored_text(actors: dict[str, Any]) -> None:
    manifest = runtime_manifest("xss")
    manifest["metadata"]["annotations"] = {"nodus.dev/description": "<script>alert(1)</script>"}
    put_runtime("demo", manifest)
    body = client_for(actors["alice"]).get("/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<script>alert(1)</script>" not in body


def test_it_marks_managed_runtimes_and_their_phase(catalog_data: Any) -> None:
    body = client_for(catalog_data["alice"]).get("/?project=nodus").content.decode()
    row = body[body.index('id="tr-nodus-sft-qwen3"') :].split("</tr>")[0]
    assert "badge managed" in row
    assert "phase-ready" in row
