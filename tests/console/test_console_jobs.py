"""Jobs in the console: the Parameters tab's manifest the API takes, the Jobs page (its filters,
its sortable columns) and what its live updates watch and share, a job's page, and a runtime's
count of compiled jobs."""

from __future__ import annotations

import html as htmlmod
import re
from typing import Any

import pytest
import yaml

from runtimes.console import live
from runtimes.console.live import Watch, fragments
from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.storage import store
from runtimes.watch.hub import HubEvent
from tests.support.api import GV, ApiClient
from tests.support.console import add_job, client_for, form_fields, header, query_of

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


def test_the_jobs_page_watches_its_own_project_with_its_own_filters(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    page = client.get("/p/demo/jobs?phase=Compiled&namespace=secret").content.decode()
    # The address cannot point the page's live updates at another project.
    assert 'data-view="jobs" data-query="namespace=demo&amp;phase=Compiled"' in page
    page = client.get("/p/demo/jobs").content.decode()
    assert 'data-view="jobs" data-query="namespace=demo"' in page


def test_pages_showing_the_same_jobs_share_one_render(
    catalog_data: Any, api: Any, monkeypatch: Any
) -> None:
    created = add_job(api, "shared")
    revision = int(created["metadata"]["resourceVersion"])
    event = HubEvent(revision, TRAINING_JOBS.key, "demo", "shared", "ADDED", created, None)
    drawn: list[str] = []
    draw = live.render_to_string

    def counted(template: str, context: Any = None) -> str:
        drawn.append(template)
        return draw(template, context)

    monkeypatch.setattr(live, "render_to_string", counted)
    pages = [
        Watch.open(catalog_data[who], "jobs", "namespace=demo&phase=Pending", [])
        for who in ("alice", "bob", "alice")
    ]
    pushed = {fragments(watch, [event], fresh=False) for watch in pages}
    assert len(pushed) == 1
    assert 'id="job-demo-shared"' in pushed.pop()
    assert drawn.count(live.JOB_RESULTS) == 1


def job_rows(body: str) -> list[str]:
    """The names of the jobs listed, in the page's order."""
    return re.findall(r'<tr id="job-demo-([^"]+)"', body)


def compiled(name: str, **values: Any) -> None:
    """The job's status as the controller writes it once compiled, with `values` in its plan."""

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"] = {"phase": "Compiled", "observedGeneration": 1, "compiled": values}
        return obj

    store.mutate(TRAINING_JOBS, "demo", name, change, subresource="status")


def test_the_jobs_page_sorts_by_a_column_header_kept_in_the_address(
    catalog_data: Any, api: Any
) -> None:
    add_job(api, "beta", method="Full")
    add_job(api, "alpha")
    add_job(api, "gamma")
    client = client_for(catalog_data["bob"])
    body = client.get("/p/demo/jobs?phase=Pending&sort=name").content.decode()
    # By name: the Name header says so and offers the reverse order.
    assert job_rows(body) == ["alpha", "beta", "gamma"]
    name = header(body, "Name")
    assert 'aria-sort="ascending"' in name
    assert query_of(htmlmod.unescape(re.search(r'href="([^"]*)"', name).group(1)))["sort"] == [
        "-name"
    ]
    assert body.count("aria-sort=") == 1
    # Each sortable header keeps the filters and names its own order.
    method = htmlmod.unescape(re.search(r'href="([^"]*)"', header(body, "Method")).group(1))
    assert query_of(method) == {"phase": ["Pending"], "sort": ["method"]}

    by_method = client.get(f"/p/demo/jobs{method}").content.decode()
    assert job_rows(by_method) == ["beta", "alpha", "gamma"]  # Full before LoRA, then by name
    assert 'aria-sort="ascending"' in header(by_method, "Method")
    assert "aria-sort" not in header(by_method, "Name")
    assert '<option value="method" selected>' in by_method  # the Sort menu says it too
    # The live watch asks for the page's order with its filters.
    assert 'data-query="namespace=demo&amp;phase=Pending&amp;sort=method"' in by_method

    reverse = client.get("/p/demo/jobs?sort=-method").content.decode()
    assert job_rows(reverse) == ["gamma", "alpha", "beta"]
    assert 'aria-sort="descending"' in header(reverse, "Method")
    assert query_of(
        htmlmod.unescape(re.search(r'href="([^"]*)"', header(reverse, "Method")).group(1))
    ) == {"sort": ["method"]}

    # The htmx filter request (the Sort menu) gets the results block in that order too.
    partial = client.get("/p/demo/jobs?sort=-name", headers={"HX-Request": "true"})
    assert job_rows(partial.content.decode()) == ["gamma", "beta", "alpha"]


def test_an_unknown_sort_on_the_jobs_page_is_by_name(catalog_data: Any, api: Any) -> None:
    for name in ("beta", "alpha"):
        add_job(api, name)
    client = client_for(catalog_data["bob"])
    for sort in ("bogus", "-bogus", "-", "name;drop", "-" * 5000):
        response = client.get("/p/demo/jobs", {"sort": sort})
        assert response.status_code == 200, sort
        body = response.content.decode()
        assert job_rows(body) == ["alpha", "beta"], sort
        assert 'aria-sort="ascending"' in header(body, "Name"), sort
        assert body.count("aria-sort=") == 1, sort


def test_jobs_without_a_cost_or_duration_come_last_in_either_order(
    catalog_data: Any, api: Any
) -> None:
    for name in ("cheap", "dear", "unplanned"):
        add_job(api, name)
    compiled("cheap", cost=1.5, seconds=600)
    compiled("dear", cost=120.0, seconds=60)
    client = client_for(catalog_data["bob"])

    def order(sort: str) -> list[str]:
        return job_rows(client.get(f"/p/demo/jobs?sort={sort}").content.decode())

    assert order("cost") == ["cheap", "dear", "unplanned"]
    assert order("-cost") == ["dear", "cheap", "unplanned"]
    assert order("duration") == ["dear", "cheap", "unplanned"]
    assert order("-duration") == ["cheap", "dear", "unplanned"]
    # Phase sorts in a job's life order: Pending before Compiled.
    assert order("phase") == ["unplanned", "cheap", "dear"]
