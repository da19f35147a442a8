"""TrainingJobs with real kubectl v1.35 and the official Python client, against a live server
whose controller (``manage.py runcontroller``, beside it on the same data directory) verifies the
seeded managed runtimes and compiles jobs: create, watch until Compiled, server-side apply.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import watch

from tests.support.console import form_fields
from tests.support.kubectl import Kubectl, Result
from tests.support.liveserver import PYTHON, REPO, LiveServer, serve, server_environment
from tests.support.signin import signed_in, submit

pytestmark = pytest.mark.kubectl

GROUP, VERSION, PLURAL = "nodus.dev", "v1beta1", "trainingjobs"


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {
            "runtimeRef": {"name": "sft-qwen3", "namespace": "nodus"},
            "model": "Qwen/Qwen3-0.6B",
            "method": "LoRA",
            "data": "hf://datasets/nodus/alpaca",
            "steps": 500,
            **spec,
        },
    }


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    """A live server and, beside it, the controller that makes runtimes Ready and compiles."""
    for live in serve("nodus-jobs-"):
        log = (live.data_dir / "controller.log").open("wb")
        controller = subprocess.Popen(
            [str(PYTHON), str(REPO / "manage.py"), "runcontroller"],
            cwd=REPO,
            env=server_environment(live.data_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield live
        finally:
            controller.terminate()
            try:
                controller.wait(timeout=15)
            except subprocess.TimeoutExpired:
                controller.kill()
                controller.wait(timeout=10)


@pytest.fixture
def kubectl(server: LiveServer, tmp_path: Path) -> Kubectl:
    return Kubectl(server.https_url, server.tokens["alice"], server.ca_pem, tmp_path, "demo")


def ok(result: Result) -> Result:
    assert result.ok, str(result)
    return result


def test_kubectl_applies_a_job_and_waits_until_it_is_compiled(
    kubectl: Kubectl, server: LiveServer
) -> None:
    manifest = yaml.safe_dump(job("tune", parameters={"optimizer": {"name": "adamw-8bit"}}))
    ok(kubectl("apply", "-f", "-", stdin=manifest))
    ok(kubectl("wait", "tj/tune", "--for=jsonpath={.status.phase}=Compiled", "--timeout=120s"))
    table = ok(kubectl("get", "tj")).stdout.splitlines()
    assert table[0].split() == [
        "NAME", "RUNTIME", "MODEL", "METHOD", "ACCELERATOR", "DURATION", "COST", "PHASE", "AGE"
    ]  # fmt: skip
    row = table[1].split()
    assert row[:4] == ["tune", "sft-qwen3", "Qwen/Qwen3-0.6B", "LoRA"]
    assert row[5].endswith(("s", "m", "h"))
    assert row[6].startswith("$")
    assert row[7] == "Compiled"
    stored = json.loads(ok(kubectl("get", "tj", "tune", "-o", "json")).stdout)
    # The chosen oneOf branch replaced the default optimizer whole.
    assert stored["status"]["compiled"]["parameters"]["optimizer"] == {"name": "adamw-8bit"}
    assert stored["status"]["imageDigest"].startswith("sha256:")


def test_the_consoles_kubectl_output_applies_as_is(kubectl: Kubectl, server: LiveServer) -> None:
    """alice edits project demo: she fills the Parameters tab, copies its kubectl output and
    runs it; the job lands in demo and compiles."""
    console = signed_in(server, "alice")
    tab = "/p/nodus/runtimes/sft-qwen3/parameters"
    page = console.get(tab).text
    form = page[page.index('<form id="param-form"') :]
    fields = {
        "job.model": "Qwen/Qwen3-0.6B",
        "job.method": "QLoRA",
        "job.quantization": "nf4",
        "job.data": "hf://datasets/nodus/alpaca",
        "job.amount": "250",
        "p.epochs": "2",
    }
    answer = submit(console, f"{tab}/check", form_fields(form, **fields))
    assert answer.status_code == 200, answer.text
    found = re.search(r'<pre class="code" id="job-kubectl">(.*?)</pre>', answer.text, re.S)
    assert found, answer.text[:3000]
    copied = html.unescape(found.group(1))
    command, heredoc = copied.split("\n", 1)
    assert command == "kubectl apply -f - <<'EOF'"
    manifest = heredoc.rsplit("EOF", 1)[0]
    name = yaml.safe_load(manifest)["metadata"]["name"]
    ok(kubectl("apply", "-f", "-", stdin=manifest))
    ok(kubectl("wait", f"tj/{name}", "--for=jsonpath={.status.phase}=Compiled", "--timeout=120s"))
    row = ok(kubectl("get", "tj", name, "--no-headers")).stdout.split()
    assert row[1:4] == ["sft-qwen3", "Qwen/Qwen3-0.6B", "QLoRA"]
    assert row[7] == "Compiled"


def test_kubectl_explains_the_jobs_fields(kubectl: Kubectl) -> None:
    # kubectl wraps descriptions: compare with the whitespace folded.
    parameters = " ".join(ok(kubectl("explain", "tj.spec.parameters")).stdout.split())
    assert "JSON merge patch" in parameters
    assert "oneOf" in parameters
    distributed = " ".join(ok(kubectl("explain", "tj.spec.distributed")).stdout.split())
    assert "nodes <integer>" in distributed
    assert "gang launcher" in distributed


def test_kubectl_prints_each_refusal_with_its_field(kubectl: Kubectl) -> None:
    bad = yaml.safe_dump(job("bad", parameters={"learningRate": -1}))
    result = kubectl("apply", "-f", "-", stdin=bad)
    assert not result.ok
    assert "spec.parameters.learningRate" in result.stderr


def test_kubectl_server_side_applies_a_change_and_it_recompiles(kubectl: Kubectl) -> None:
    manifest = job("ssa", parameters={"learningRate": 0.0001})
    ok(kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(manifest)))
    ok(kubectl("wait", "tj/ssa", "--for=jsonpath={.status.phase}=Compiled", "--timeout=120s"))
    manifest["spec"]["parameters"]["learningRate"] = 0.0003
    ok(kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(manifest)))
    ok(kubectl("wait", "tj/ssa", "--for=jsonpath={.status.observedGeneration}=2", "--timeout=120s"))
    stored = json.loads(ok(kubectl("get", "tj", "ssa", "-o", "json")).stdout)
    assert stored["status"]["phase"] == "Compiled"
    assert stored["status"]["compiled"]["parameters"]["learningRate"] == 0.0003


def custom_api(server: LiveServer) -> k8s.CustomObjectsApi:
    configuration = k8s.Configuration(host=server.url)
    configuration.api_key = {"authorization": server.tokens["alice"]}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return k8s.CustomObjectsApi(k8s.ApiClient(configuration))


def test_the_python_client_creates_watches_and_applies_a_job(server: LiveServer) -> None:
    api = custom_api(server)
    created = api.create_namespaced_custom_object(GROUP, VERSION, "demo", PLURAL, job("py"))
    assert created["status"]["phase"] == "Pending"
    phases = []
    stream = watch.Watch().stream(
        api.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "demo",
        PLURAL,
        field_selector="metadata.name=py",
        resource_version=created["metadata"]["resourceVersion"],
        timeout_seconds=120,
    )
    for event in stream:
        phases.append(event["object"]["status"]["phase"])
        if phases[-1] == "Compiled":
            break
    assert phases[-1] == "Compiled", phases

    applied = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "demo",
        PLURAL,
        "py",
        job("py", steps=1000),
        field_manager="python",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    assert applied["spec"]["steps"] == 1000
    assert applied["metadata"]["generation"] == 2
    assert any(m["manager"] == "python" for m in applied["metadata"]["managedFields"])


def test_a_compiled_job_keeps_its_compile_until_asked_and_outlives_its_runtime(
    kubectl: Kubectl,
) -> None:
    """Over the live API and controller: a runtime of demo's own moves on a generation, its
    compiled job says RuntimeChanged and keeps the compile; the recompile annotation compiles
    against the new generation; deleting the runtime leaves the job RuntimeMissing."""
    managed = json.loads(ok(kubectl("get", "tr", "sft-qwen3", "-n", "nodus", "-o", "json")).stdout)
    runtime = {
        "apiVersion": managed["apiVersion"],
        "kind": "TrainingRuntime",
        "metadata": {"name": "mover", "namespace": "demo"},
        "spec": managed["spec"],
    }
    ok(kubectl("apply", "-f", "-", stdin=json.dumps(runtime)))
    ok(kubectl("wait", "tr/mover", "--for=jsonpath={.status.phase}=Ready", "--timeout=50s"))
    manifest = job("pinned", runtimeRef={"name": "mover"})
    ok(kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest)))
    ok(kubectl("wait", "tj/pinned", "--for=jsonpath={.status.phase}=Compiled", "--timeout=50s"))
    before = json.loads(ok(kubectl("get", "tj", "pinned", "-o", "json")).stdout)["status"]
    generation = before["runtimeGeneration"]

    moved = {"spec": {"defaults": {"parameters": {"learningRate": 0.000123}}}}
    ok(kubectl("patch", "tr", "mover", "--type=merge", "-p", json.dumps(moved)))
    ok(kubectl("wait", "tj/pinned", "--for=condition=RuntimeChanged", "--timeout=50s"))
    after = json.loads(ok(kubectl("get", "tj", "pinned", "-o", "json")).stdout)["status"]
    assert after["runtimeGeneration"] == generation
    assert after["compiled"] == before["compiled"]
    [changed] = [c for c in after["conditions"] if c["type"] == "RuntimeChanged"]
    assert f"generation {generation + 1}" in changed["message"]
    assert "spec.defaults" in changed["message"]

    ok(kubectl("annotate", "tj", "pinned", "nodus.dev/recompile=1"))
    ok(
        kubectl(
            "wait",
            "tj/pinned",
            f"--for=jsonpath={{.status.runtimeGeneration}}={generation + 1}",
            "--timeout=50s",
        )
    )
    again = json.loads(ok(kubectl("get", "tj", "pinned", "-o", "json")).stdout)["status"]
    assert again["phase"] == "Compiled"
    assert again["compiled"]["parameters"]["learningRate"] == 0.000123

    ok(kubectl("delete", "tr", "mover", "--wait=true", "--timeout=50s"))
    ok(kubectl("wait", "tj/pinned", "--for=condition=RuntimeReady=False", "--timeout=50s"))
    gone = json.loads(ok(kubectl("get", "tj", "pinned", "-o", "json")).stdout)["status"]
    [ready] = [c for c in gone["conditions"] if c["type"] == "RuntimeReady"]
    assert ready["reason"] == "RuntimeMissing"
