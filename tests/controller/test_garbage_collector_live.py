"""Garbage collection end to end, as an operator runs it: a live daphne, `manage.py
runcontroller` beside it on the same data directory (the leader collects), and the real kubectl
deleting with each `--cascade`."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.api import GV, runtime_manifest
from tests.support.kubectl import Kubectl
from tests.support.liveserver import PYTHON, REPO, LiveServer, server_environment

TRS = f"{GV}/namespaces/demo/trainingruntimes"

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def collector(daphne_server: LiveServer) -> Iterator[subprocess.Popen[bytes]]:
    """`manage.py runcontroller` on the live server's data directory."""
    log = (daphne_server.data_dir / "controller.log").open("wb")
    process = subprocess.Popen(
        [str(PYTHON), str(REPO / "manage.py"), "runcontroller"],
        cwd=REPO,
        env={**server_environment(daphne_server.data_dir), "NODUS_CONTROLLER_POLL_SECONDS": "0.2"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def alice(daphne_server: LiveServer) -> Iterator[httpx.Client]:
    with daphne_server.client("alice") as client:
        yield client


@pytest.fixture
def kubectl(daphne_server: LiveServer, tmp_path: Path) -> Kubectl:
    return Kubectl(
        daphne_server.https_url, daphne_server.tokens["alice"], daphne_server.ca_pem, tmp_path
    )


def create(
    client: httpx.Client, name: str, owner: dict[str, Any] | None = None, block: bool = False
) -> dict[str, Any]:
    body = runtime_manifest(name)
    if owner is not None:
        meta = owner["metadata"]
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "blockOwnerDeletion": block,
            }
        ]
    response = client.post(TRS, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def wait_gone(client: httpx.Client, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while client.get(f"{TRS}/{name}").status_code != 404:
        if time.monotonic() > deadline:
            pytest.fail(f"{name} still there after {timeout} s")
        time.sleep(0.1)


def test_kubectl_deletes_in_the_background_and_the_collector_follows(
    alice: httpx.Client, kubectl: Kubectl, collector: Any
) -> None:
    owner = create(alice, "live-bg")
    create(alice, "live-bg-child", owner)
    done = kubectl("delete", "tr", "live-bg", "--cascade=background")
    assert done.ok, str(done)
    wait_gone(alice, "live-bg-child")


def test_kubectl_waits_for_a_foreground_deletion(
    alice: httpx.Client, kubectl: Kubectl, collector: Any
) -> None:
    owner = create(alice, "live-fg")
    create(alice, "live-fg-child", owner, block=True)
    # kubectl waits until the owner is gone, which is after its blocking dependent.
    done = kubectl("delete", "tr", "live-fg", "--cascade=foreground", "--timeout=60s")
    assert done.ok, str(done)
    assert alice.get(f"{TRS}/live-fg-child").status_code == 404


def test_kubectl_orphans_and_the_dependent_stays(
    alice: httpx.Client, kubectl: Kubectl, collector: Any
) -> None:
    owner = create(alice, "live-or")
    create(alice, "live-or-child", owner)
    done = kubectl("delete", "tr", "live-or", "--cascade=orphan", "--timeout=60s")
    assert done.ok, str(done)
    child = alice.get(f"{TRS}/live-or-child")
    assert child.status_code == 200
    assert "ownerReferences" not in child.json()["metadata"]
    shown = yaml.safe_load(kubectl("get", "tr", "live-or-child", "-o", "yaml").stdout)
    assert shown["metadata"]["name"] == "live-or-child"
