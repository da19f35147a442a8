"""States that read at a glance: phase badges, why a runtime failed or a job did not compile,
and the kube-console conventions (relative ages, newest first, managedFields on request)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import job_manifest, runtime_manifest
from tests.support.console import client_for, put_runtime

pytestmark = pytest.mark.django_db
AT = {"lastTransitionTime": "2026-12-01T10:00:00Z"}
REFUSED = "registry registry.example.com is not on the allow-list"


def failed_runtime(name: str = "refused") -> None:
    put_runtime("demo", runtime_manifest(name))

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {
            **obj["status"],
            "phase": "Failed",
            "observedGeneration": obj["metadata"]["generation"],
            "conditions": [
                {
                    "type": "Verified",
                    "status": "False",
                    "reason": "RegistryRefused",
                    "message": REFUSED,
                    "lastTransitionTime": "2026-12-01T10:00:00Z",
                }
            ],
        }
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", name, change, subresource="status")


def badge(body: str) -> str:
    return re.search(
        r'<span class="badge phase [^"]*"[^>]*>.*?</span>\s*\w+</span>', body, re.S
    ).group(0)


def test_a_failed_runtimes_overview_says_why_and_what_to_do(catalog_data: Any) -> None:
    failed_runtime()
    body = client_for(catalog_data["bob"]).get("/p/demo/runtimes/refused/overview").content.decode()
    problems = re.search(r'<section id="runtime-problems".*?</section>', body, re.S).group(0)
    assert "jobs will not compile until it is Ready" in problems
    assert "RegistryRefused" in problems
    assert REFUSED in problems
    assert "Fix: Push the image to a registry on the platform&#x27;s allow-list" in problems
    assert "phase-failed" in badge(body)
    assert "✕" in badge(body)


def test_a_failed_runtimes_parameters_tab_offers_no_job_as_if_all_were_well(
    catalog_data: Any,
) -> None:
    failed_runtime()
    body = client_for(catalog_data["alice"]).get("/p/demo/runtimes/refused/parameters")
    text = body.content.decode()
    verdict = re.search(r'<p id="param-verdict"[^>]*>(.*?)</p>', text, re.S).group(1)
    assert "jobs will not compile until it is Ready" in verdict
    assert "valid" not in verdict.lower()
    assert 'id="create-job"' not in text
    # A Ready runtime of the same project still offers it to the same editor.
    ready = client_for(catalog_data["alice"]).get("/p/demo/runtimes/sft-demo/parameters")
    assert 'id="create-job"' in ready.content.decode()
    assert 'id="runtime-problems"' not in ready.content.decode()


def test_each_phase_has_its_own_class_and_icon_beside_its_name(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    failed_runtime()
    put_runtime("demo", runtime_manifest("waiting"))
    seen = {}
    for name in ("sft-demo", "refused", "waiting"):
        found = badge(client.get(f"/p/demo/runtimes/{name}/overview").content.decode())
        phase = re.search(r'data-phase="(\w+)"', found).group(1)
        icon = re.search(r'<span class="phase-icon" aria-hidden="true">(.)</span>', found).group(1)
        # The word is said too, not only a colour.
        assert re.search(r"</span>\s*(\w+)</span>$", found).group(1) == phase
        seen[phase] = (re.search(r"phase-(\w+)", found.split('"')[1].split()[-1]).group(1), icon)
    assert set(seen) == {"Ready", "Failed", "Pending"}
    assert len({icon for _css, icon in seen.values()}) == 3


def test_an_invalid_jobs_page_says_why_it_did_not_compile(catalog_data: Any, api: Any) -> None:
    response = api("alice").post(
        "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs", job_manifest("broken")
    )
    assert response.status_code == 201, response.json_body
    cause = "does not compile: spec.steps: must be at most 1000000"

    def invalid(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {
            "phase": "Invalid",
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "RuntimeReady",
                    "status": "True",
                    "reason": "RuntimeReady",
                    "message": "ok",
                    **AT,
                },
                {
                    "type": "Compiled",
                    "status": "False",
                    "reason": "CompileFailed",
                    "message": cause,
                    **AT,
                },
            ],
        }
        return obj

    store.mutate(TRAINING_JOBS, "demo", "broken", invalid, subresource="status")
    body = client_for(catalog_data["bob"]).get("/p/demo/jobs/broken").content.decode()
    problems = re.search(r'<section id="job-problems".*?</section>', body, re.S).group(0)
    assert "This job does not compile" in problems
    assert cause in problems
    assert "Fix: Change the fields the message names" in problems
    assert "not compiled yet" not in body
    assert "phase-invalid" in body
    # Its conditions wrap as whole words: a card per condition on phones, never mid-word.
    assert 'class="small cards conditions"' in body


def test_the_yaml_tab_hides_managed_fields_until_asked(catalog_data: Any, api: Any) -> None:
    path = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes/sft-demo"
    labelled = api("alice").patch(
        path,
        {"metadata": {"labels": {"team": "vision"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert labelled.status_code == 200, labelled.json_body
    assert labelled.json_body["metadata"]["managedFields"]
    client = client_for(catalog_data["bob"])
    hidden = client.get("/p/demo/runtimes/sft-demo/yaml").content.decode()
    manifest = re.search(r'<pre class="code" id="manifest"[^>]*>(.*?)</pre>', hidden, re.S).group(1)
    assert "managedFields" not in yaml.safe_load(manifest.replace("&#x27;", "'"))["metadata"]
    toggle = re.search(r'<a class="button" id="managed-fields-toggle"[^>]*>(.*?)</a>', hidden)
    assert toggle
    assert toggle.group(1).startswith("Show managedFields")
    shown = client.get("/p/demo/runtimes/sft-demo/yaml?managedFields=show").content.decode()
    assert "managedFields:" in shown
    assert "Hide managedFields" in shown


def test_history_offers_no_compare_with_now_on_the_newest_revision(catalog_data: Any) -> None:
    def relabel(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].setdefault("labels", {})["team"] = "vision"
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", "sft-demo", relabel)
    body = client_for(catalog_data["bob"]).get("/p/demo/runtimes/sft-demo/history").content.decode()
    entries = re.findall(r'<li class="history-entry">(.*?)</li>', body, re.S)
    assert len(entries) >= 2
    assert "compare with now" not in entries[0]
    assert '<span class="chip">current</span>' in entries[0]
    assert "compare with now" in entries[1]


def test_jobs_list_newest_first_with_ages_and_absolute_times(catalog_data: Any, api: Any) -> None:
    for name in ("first", "second", "third"):
        created = api("alice").post(
            "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs", job_manifest(name)
        )
        assert created.status_code == 201
    body = client_for(catalog_data["bob"]).get("/p/demo/jobs").content.decode()
    assert re.findall(r'<tr id="job-demo-([^"]+)"', body) == ["third", "second", "first"]
    assert '<option value="-created" selected>' in body
    ages = re.findall(r'<time datetime="([^"]+)" title="([^"]+)">([^<]+)</time>', body)
    assert len(ages) == 3
    for iso, absolute, age in ages:
        assert iso.endswith("Z")
        assert absolute.endswith(" UTC")
        assert re.fullmatch(r"\d+[smhd]", age)


def test_the_catalogs_hidden_models_are_a_disclosure_not_a_tooltip(catalog_data: Any) -> None:
    body = client_for(catalog_data["bob"]).get("/").content.decode()
    more = re.findall(
        r'<details class="more-models"><summary>\+(\d+)'
        r'<span class="visually-hidden"> more models</span></summary>(.*?)</details>',
        body,
        re.S,
    )
    assert more
    for count, chips in more:
        assert chips.count('<span class="chip mono">') == int(count)
