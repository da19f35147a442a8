"""Jobs in the console: the Parameters tab's manifest the API takes, the Jobs page and its live
rows, a job's page, and a runtime's count of compiled jobs."""

from __future__ import annotations

import html as htmlmod
import re
from typing import Any

import pytest
import yaml
from django.http import QueryDict

from runtimes.console.live import Watch, fragments
from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.storage import store
from runtimes.watch.hub import HubEvent
from tests.support.api import GV, ApiClient
from tests.support.console import client_for, form_fields

pytestmark = pytest.mark.django_db
SFT = "/p/nodus/runtimes/sft-qwen3"


def output(body: str, element: str) -> str:
    found = re.search(rf'<pre class="code" id="{element}">(.*?)</pre>', body, re.S)
    assert found, body[:2000]
    return htmlmod.unescape(found.group(1))


def filled(client: Any, **changes: str) -> str:
    page = client.get(f"{SFT}/parameters").content.decode()
    form = page[page.index('<form id="param-form"') :]
    data = form_fields(
        form,
        **{
            "job.model": "Qwen/Qwen3-0.6B",
            "job.method": "LoRA",
            "job.data": "hf://datasets/nodus/alpaca",
            "job.amount": "200",
            **changes,
        },
    )
    return str(client.post(f"{SFT}/parameters/check", data).content.decode())


def test_the_parameters_tab_writes_a_manifest_the_api_takes(catalog_data: Any, api: Any) -> None:
    body = filled(client_for(catalog_data["alice"]), **{"p.learningRate": "0.0001"})
    manifest = yaml.safe_load(output(body, "job-manifest"))
    assert manifest["metadata"]["namespace"] == "demo"  # alice's project, not nodus
    assert manifest["spec"]["runtimeRef"] == {"name": "sft-qwen3", "namespace": "nodus"}
    assert manifest["spec"]["parameters"] == {"learningRate": 0.0001}  # only what changed
    kubectl = output(body, "job-kubectl")
    assert kubectl.startswith("kubectl apply -f - <<'EOF'\n")
    assert yaml.safe_load(kubectl.split("\n", 1)[1].rsplit("EOF", 1)[0]) == manifest
    created = ApiClient.post(api("alice"), f"{GV}/namespaces/demo/trainingjobs", manifest)
    assert created.status_code == 201, created.json_body
    # The same choices name the same job: applying the copied text again changes nothing.
    again = yaml.safe_load(
        output(
            filled(client_for(catalog_data["alice"]), **{"p.learningRate": "0.0001"}),
            "job-manifest",
        )
    )
    assert again["metadata"]["name"] == manifest["metadata"]["name"]


def test_only_editors_get_the_create_button(catalog_data: Any) -> None:
    alice = filled(client_for(catalog_data["alice"]))
    assert 'data-create-job="/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs"' in alice
    assert 'data-body="{&quot;apiVersion&quot;:&quot;nodus.dev/v1beta1&quot;' in alice
    bob = filled(client_for(catalog_data["bob"]))
    assert "data-create-job" not in bob


def add_job(api: Any, name: str, method: str = "LoRA") -> dict[str, Any]:
    body = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "sft-qwen3", "namespace": "nodus"},
            "model": "Qwen/Qwen3-0.6B",
            "method": method,
            "data": "hf://datasets/nodus/alpaca",
            "steps": 100,
        },
    }
    response = api("alice").post(f"{GV}/namespaces/demo/trainingjobs", body)
    assert response.status_code == 201, response.json_body
    created: dict[str, Any] = response.json_body
    return created


def test_the_jobs_page_lists_and_filters_a_projects_jobs(catalog_data: Any, api: Any) -> None:
    add_job(api, "lora-run")
    add_job(api, "full-run", method="Full")
    client = client_for(catalog_data["bob"])
    page = client.get("/p/demo/jobs").content.decode()
    assert 'id="job-demo-lora-run"' in page
    assert 'id="job-demo-full-run"' in page
    assert 'data-view="jobs"' in page
    filtered = client.get("/p/demo/jobs?q=full").content.decode()
    assert 'id="job-demo-full-run"' in filtered
    assert 'id="job-demo-lora-run"' not in filtered
    assert client_for(catalog_data["charlie"]).get("/p/demo/jobs").status_code == 404


def test_a_jobs_page_shows_its_plan_and_conditions(catalog_data: Any, api: Any) -> None:
    add_job(api, "lora-run")
    client = client_for(catalog_data["bob"])
    page = client.get("/p/demo/jobs/lora-run").content.decode()
    assert "nodus/sft-qwen3" in page
    assert "phase-pending" in page
    assert client.get("/p/demo/jobs/nope").status_code == 404
    assert client_for(catalog_data["charlie"]).get("/p/demo/jobs/lora-run").status_code == 404


def test_the_runtime_page_counts_the_jobs_compiled_against_it(catalog_data: Any, api: Any) -> None:
    add_job(api, "lora-run")
    add_job(api, "other")

    def compile_it(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {**obj["status"], "phase": "Compiled", "observedGeneration": 1}
        return obj

    store.mutate(TRAINING_JOBS, "demo", "lora-run", compile_it, subresource="status")
    page = client_for(catalog_data["alice"]).get(f"{SFT}/overview").content.decode()
    assert '<dd id="jobs-compiled"><strong>1</strong> job compiled against it</dd>' in page
    # charlie reads nodus but not demo: its jobs are not counted for him.
    page = client_for(catalog_data["charlie"]).get(f"{SFT}/overview").content.decode()
    assert "<strong>0</strong> jobs compiled" in page


def test_a_new_job_is_pushed_to_the_jobs_page(catalog_data: Any, api: Any) -> None:
    watch = Watch.open(catalog_data["bob"], "jobs", "namespace=demo", ["job-rows"])
    created = add_job(api, "pushed")
    revision = int(created["metadata"]["resourceVersion"])
    event = HubEvent(revision, TRAINING_JOBS.key, "demo", "pushed", "ADDED", created, None)
    pushed = fragments(watch, [event])
    assert 'hx-swap-oob="beforeend:#job-rows"' in pushed
    assert 'id="job-demo-pushed"' in pushed
    # A filter the job does not match pushes nothing; charlie, who may not read demo, neither.
    quiet = Watch.open(catalog_data["bob"], "jobs", "namespace=demo&phase=Compiled", ["job-rows"])
    assert "job-demo-pushed" not in fragments(quiet, [event])
    outsider = Watch(
        catalog_data["charlie"], "jobs", QueryDict("namespace=demo"), {"job-rows"}, {"nodus"}
    )
    assert "job-demo-pushed" not in fragments(outsider, [event])
