"""The Kubernetes manifests under deploy/, rendered by the real kubectl's kustomize and checked
against Kubernetes 1.35's schemas, then held to the topology docs/deploy.md promises."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.kubectl import kubectl_binary

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = ("trial", "production")
KUBERNETES = "1.35.0"


def render(overlay: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(kubectl_binary()), "kustomize", str(ROOT / "deploy" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(request.param)


def test_every_object_is_valid_for_kubernetes_1_35(rendered: list[dict[str, Any]]) -> None:
    for obj in rendered:
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_workers_are_several_spread_and_disruption_bounded(rendered: list[dict[str, Any]]) -> None:
    api = named(rendered, "Deployment", "nodus-api")
    assert api["spec"]["replicas"] >= 2
    labels = api["spec"]["template"]["metadata"]["labels"]
    anti = pod_spec(api)["affinity"]["podAntiAffinity"]
    [term] = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    pdb = named(rendered, "PodDisruptionBudget", "nodus-api")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1
    service = named(rendered, "Service", "nodus-api")
    assert service["spec"]["selector"].items() <= labels.items()
    controller = named(rendered, "Deployment", "nodus-controller")
    assert not service["spec"]["selector"].items() <= (
        controller["spec"]["template"]["metadata"]["labels"].items()
    ), "the API Service must not send requests to the controller"


def test_the_ingress_routes_to_the_api_service(rendered: list[dict[str, Any]]) -> None:
    ingress = named(rendered, "Ingress", "nodus-console")
    [rule] = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    service = named(rendered, "Service", backend["name"])
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert ingress["spec"]["tls"], "the console and kubectl are served over TLS"


def test_workers_are_probed_on_livez_and_readyz(rendered: list[dict[str, Any]]) -> None:
    [api] = pod_spec(named(rendered, "Deployment", "nodus-api"))["containers"]
    assert api["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--no-setup" in api["args"]


def test_one_controller_leads_and_no_worker_runs_one(rendered: list[dict[str, Any]]) -> None:
    [config] = [o for o in rendered if o["kind"] == "ConfigMap"]
    assert config["data"]["NODUS_EMBEDDED_CONTROLLER"] == "0"
    [controller] = pod_spec(named(rendered, "Deployment", "nodus-controller"))["containers"]
    assert controller["args"][-1] == "runcontroller"


def test_every_pod_runs_as_non_root_without_privileges(rendered: list[dict[str, Any]]) -> None:
    ours = [
        o
        for o in rendered
        if o["kind"] in {"Deployment", "Job"} and o["metadata"]["name"].startswith("nodus-")
    ]
    assert len(ours) == 3
    for obj in ours:
        spec = pod_spec(obj)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["automountServiceAccountToken"] is False
        for container in spec.get("initContainers", []) + spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"]["drop"] == ["ALL"]
            assert container["image"].endswith(":0.1.0"), "images are pinned, never :latest"


def test_every_secret_and_config_a_pod_names_is_rendered_or_documented(
    rendered: list[dict[str, Any]],
) -> None:
    documented = (ROOT / "docs" / "deploy.md").read_text()
    present = {(o["kind"], o["metadata"]["name"]) for o in rendered}
    for obj in rendered:
        if obj["kind"] not in {"Deployment", "Job", "StatefulSet"}:
            continue
        spec = pod_spec(obj)
        for container in spec.get("initContainers", []) + spec["containers"]:
            for source in container.get("envFrom", []):
                kind, ref = (
                    ("ConfigMap", source["configMapRef"])
                    if "configMapRef" in source
                    else ("Secret", source["secretRef"])
                )
                assert (kind, ref["name"]) in present or f"`{ref['name']}`" in documented
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                name = volume["secret"]["secretName"]
                assert ("Secret", name) in present or f"`{name}`" in documented


def test_the_trial_brings_its_own_postgresql_and_redis() -> None:
    objects = render("trial")
    named(objects, "StatefulSet", "nodus-postgres")
    named(objects, "StatefulSet", "nodus-redis")
    [secret] = [
        o for o in objects if o["kind"] == "Secret" and "nodus-console" in o["metadata"]["name"]
    ]
    assert {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"} <= secret["data"].keys()
