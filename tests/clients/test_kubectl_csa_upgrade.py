"""kubectl's move from client-side to server-side apply (client-go's csaupgrade) for every
runtime of the managed catalog, whose presets the server fills with defaults: applied
client-side, then server-side with an unrelated change, each ends owned by kubectl alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.registry.seeding import MANAGED_CATALOG
from tests.support.kubectl import Kubectl
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.kubectl

CATALOG = [doc for doc in yaml.safe_load_all(MANAGED_CATALOG.read_text()) if doc]


def in_demo(manifest: dict[str, Any]) -> dict[str, Any]:
    """The managed runtime as alice's own in demo, under a name of its own."""
    copy: dict[str, Any] = json.loads(json.dumps(manifest))
    name = f"csa-{manifest['metadata']['name']}"
    copy["metadata"] = {"name": name, "namespace": "demo", "labels": {"app": "csa"}}
    copy.pop("status", None)
    return copy


@pytest.mark.parametrize("manifest", CATALOG, ids=[m["metadata"]["name"] for m in CATALOG])
def test_every_managed_runtime_moves_to_server_side_apply_without_conflict(
    manifest: dict[str, Any], daphne_server: LiveServer, tmp_path: Path
) -> None:
    kubectl = Kubectl(
        daphne_server.https_url,
        daphne_server.tokens["alice"],
        daphne_server.ca_pem,
        tmp_path / "home",
        "demo",
    )
    runtime = in_demo(manifest)
    path = tmp_path / "rt.yaml"
    path.write_text(yaml.safe_dump(runtime))
    first = kubectl("apply", "-f", str(path))
    assert first.ok, str(first)

    runtime["metadata"]["labels"]["tier"] = "gold"
    path.write_text(yaml.safe_dump(runtime))
    upgraded = kubectl("apply", "--server-side", "-f", str(path))
    assert upgraded.ok, str(upgraded)

    shown = kubectl("get", "tr", runtime["metadata"]["name"], "-o", "json", "--show-managed-fields")
    got = json.loads(shown.stdout)
    managers = {(e["manager"], e["operation"]) for e in got["metadata"]["managedFields"]}
    assert ("kubectl-client-side-apply", "Update") not in managers
    assert ("kubectl", "Apply") in managers
    assert got["metadata"]["labels"]["tier"] == "gold"
    kubectl("delete", "tr", runtime["metadata"]["name"], "--wait=false")
