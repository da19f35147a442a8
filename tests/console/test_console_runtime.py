"""The runtime page: tabs, access, presets with reasons, estimates, parameters, status, YAML."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import runtime_manifest
from tests.support.console import client_for, form_fields, managed_catalog, put_runtime

pytestmark = pytest.mark.django_db
TABS = ("overview", "presets", "estimates", "parameters", "status", "yaml", "history")
SFT = "/p/nodus/runtimes/sft-qwen3"


@pytest.mark.parametrize("tab", TABS)
def test_it_renders_every_tab(catalog_data: Any, tab: str) -> None:
    response = client_for(catalog_data["bob"]).get(f"{SFT}/{tab}")
    assert response.status_code == 200
    assert f'href="{SFT}/{tab}" aria-current="page"' in response.content.decode()


def test_it_redirects_the_bare_runtime_url_to_overview(catalog_data: Any) -> None:
    response = client_for(catalog_data["bob"]).get(SFT)
    assert response["Location"] == f"{SFT}/overview"


def test_it_hides_runtimes_of_other_projects(catalog_data: Any) -> None:
    client = client_for(catalog_data["charlie"])
    assert client.get("/p/demo/runtimes/sft-demo/overview").status_code == 404
    assert client.get("/p/secret/runtimes/hidden-runtime/yaml.download").status_code == 404


def test_it_answers_404_for_unknown_runtimes_and_tabs(catalog_data: Any) -> None:
    client = client_for(catalog_data["alice"])
    assert client.get("/p/demo/runtimes/nope/overview").status_code == 404
    assert client.get("/p/demo/runtimes/sft-demo/bogus").status_code == 404


def test_it_offers_edit_and_delete_only_to_editors(catalog_data: Any) -> None:
    alice = client_for(catalog_data["alice"]).get("/p/demo/runtimes/sft-demo/overview")
    bob = client_for(catalog_data["bob"]).get("/p/demo/runtimes/sft-demo/overview")
    assert b">Edit<" in alice.content
    assert b">Delete<" in alice.content
    assert b">Edit<" not in bob.content
    assert b">Delete<" not in bob.content
    # Nobody but platform admins edits the managed catalog.
    assert b">Edit<" not in client_for(catalog_data["alice"]).get(f"{SFT}/overview").content
    assert b">Edit<" in client_for(catalog_data["root"]).get(f"{SFT}/overview").content


def test_it_shows_the_requirements_checklist_and_command(catalog_data: Any) -> None:
    body = client_for(catalog_data["bob"]).get(f"{SFT}/overview").content.decode()
    assert '<li class="on">data <strong>required</strong>' in body
    assert '<li class="">teacher <span class="muted">optional</span>' in body
    assert "python -m nodus_trainers.sft" in body


def test_it_draws_sidecars_beside_the_trainer(catalog_data: Any) -> None:
    grpo = next(m for m in managed_catalog() if m["spec"].get("defaults", {}).get("sidecars"))
    name = grpo["metadata"]["name"]
    body = (
        client_for(catalog_data["bob"]).get(f"/p/nodus/runtimes/{name}/overview").content.decode()
    )
    sidecar = grpo["spec"]["defaults"]["sidecars"][0]["name"]
    assert f'font-weight="600">{sidecar}</text>' in body
    assert '<line class="edge"' in body


def test_it_explains_which_accelerators_match_each_preset(catalog_data: Any) -> None:
    body = client_for(catalog_data["bob"]).get(f"{SFT}/presets").content.decode()
    assert "Qwen/Qwen3-0.6B" in body
    assert "family L40S" in body or "family L4" in body
    assert "per GPU ≥ minMemory" in body or "per GPU &lt; minMemory" in body
    assert "vCPU" in body


def test_it_recomputes_estimates_from_the_query(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    small = client.get(f"{SFT}/estimates?amount=100", headers={"HX-Request": "true"})
    large = client.get(f"{SFT}/estimates?amount=100&batchSize=32", headers={"HX-Request": "true"})
    body = small.content.decode()
    assert body.lstrip().startswith('<section id="estimate-result"')
    assert '<rect class="bar"' in body

    def costs(html: str) -> list[float]:
        return [
            float(c.replace(",", ""))
            for c in re.findall(r'<td class="num cost">\$([\d,.]+)</td>', html)
        ]

    assert costs(body)
    # batchSize 32 is four times the default of 8: every run takes four times as long.
    assert costs(large.content.decode())[0] == pytest.approx(costs(body)[0] * 4, rel=0.01)


def test_it_reports_a_bad_estimate_input(catalog_data: Any) -> None:
    body = client_for(catalog_data["bob"]).get(f"{SFT}/estimates?amount=lots").content.decode()
    assert "Enter a whole number of 1 or more (&#x27;lots&#x27; is not one)" in body


def parameters_form(client: Any) -> str:
    html = client.get(f"{SFT}/parameters").content.decode()
    return html[html.index('<form id="param-form"') :]


def test_it_prefills_the_parameters_and_starts_with_an_empty_job(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    html = parameters_form(client)
    assert 'name="p.learningRate" type="text" value="2e-05"' in html
    manifest = yaml.safe_load(
        re.search(r'<pre class="code" id="job-manifest">(.*?)</pre>', html, re.S).group(1)
    )
    assert manifest["kind"] == "TrainingJob"
    assert "parameters" not in manifest["spec"]


def test_it_rejects_a_bad_parameter_at_its_field(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    data = form_fields(parameters_form(client), **{"p.learningRate": "5"})
    body = client.post(f"{SFT}/parameters/check", data).content.decode()
    assert (
        '<p class="field-error" id="err-sf-p_2e_learningRate" hx-swap-oob="true" role="alert">'
        "Must be 1 or less</p>"
    ) in body


def test_it_accepts_a_good_parameter_and_shows_only_the_change(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    data = form_fields(
        parameters_form(client),
        **{
            "p.learningRate": "0.0001",
            "job.model": "Qwen/Qwen3-0.6B",
            "job.method": "LoRA",
            "job.amount": "100",
        },
    )
    body = client.post(f"{SFT}/parameters/check", data).content.decode()
    manifest = yaml.safe_load(
        re.search(r'<pre class="code" id="job-manifest">(.*?)</pre>', body, re.S)
        .group(1)
        .replace("&#x27;", "'")
    )
    assert manifest["spec"]["parameters"] == {"learningRate": 0.0001}
    assert manifest["spec"]["model"] == "Qwen/Qwen3-0.6B"
    assert manifest["spec"]["steps"] == 100
    assert 'id="err-sf-p_2e_learningRate" hx-swap-oob="true"></p>' in body
    assert "curl -sS -X POST" in body
    assert "/trainingruntimes/sft-qwen3/compile" in body


def test_it_redraws_the_form_for_array_edits(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    data = form_fields(parameters_form(client), _op="add:p.lora.targetModules")
    body = client.post(f"{SFT}/parameters/check?render=form", data).content.decode()
    assert body.lstrip().startswith('<form id="param-form"')
    assert 'name="p.lora.targetModules.4"' in body


def test_it_warns_when_the_image_runs_as_root(actors: dict[str, Any]) -> None:
    put_runtime("demo", runtime_manifest("rooty"))

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {
            **obj["status"],
            "phase": "Ready",
            "observedGeneration": obj["metadata"]["generation"],
            "imageDigest": "sha256:" + "ab" * 32,
            "conditions": [
                {
                    "type": "Verified",
                    "status": "True",
                    "reason": "SignatureVerified",
                    "message": "image sha256:abab is signed by trusted key sha256:" + "cd" * 32,
                    "lastTransitionTime": "2026-12-01T10:00:00Z",
                }
            ],
        }
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", "rooty", change, subresource="status")
    body = client_for(actors["bob"]).get("/p/demo/runtimes/rooty/status").content.decode()
    assert "runs as root" in body
    assert "sha256:" + "cd" * 32 in body
    assert "SignatureVerified" in body


def test_it_downloads_the_yaml(catalog_data: Any) -> None:
    response = client_for(catalog_data["bob"]).get(f"{SFT}/yaml.download")
    assert response["Content-Disposition"] == 'attachment; filename="nodus-sft-qwen3.yaml"'
    assert yaml.safe_load(response.content)["metadata"]["name"] == "sft-qwen3"
