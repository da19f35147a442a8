"""Threat row: PATCH /status to Ready with a fake digest, by a project admin or an editor.

Status is the controller's. Writing `/status` needs the `trainingruntimes/status` permission,
which only the controller's service account and platform admins hold: the editor's and the
project admin's writes are refused with a 403 Status and leave the object as it was, while the
controller (`manage.py runcontroller`, with the token it keeps in the data dir) writes. Real
kubectl's `auth can-i` asks the same rules through a SelfSubjectAccessReview.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.availability import livez_stays_up, run_in_threads
from tests.support.kubectl import Kubectl
from tests.support.liveserver import LiveServer
from tests.support.manage import add_member, manage
from tests.support.watch_live import DEMO, manifest

pytestmark = pytest.mark.kubectl

FAKE_READY = {
    "status": {
        "phase": "Ready",
        "observedGeneration": 1,
        "imageDigest": "sha256:" + "00" * 32,
        "imageUser": "root",
    }
}
MERGE = {"Content-Type": "application/merge-patch+json"}
CONTROLLER = "system:serviceaccount:nodus:controller"


@pytest.fixture(scope="module")
def tokens(daphne_server: LiveServer) -> dict[str, str]:
    """The live actors' tokens, plus dave, an editor of demo."""
    return {**daphne_server.tokens, "dave": add_member(daphne_server, "dave", "editor")}


@pytest.fixture
def client(daphne_server: LiveServer, tokens: dict[str, str]) -> Iterator[Callable[..., Any]]:
    opened: list[httpx.Client] = []

    def make(token: str) -> httpx.Client:
        made = httpx.Client(
            base_url=daphne_server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        opened.append(made)
        return made

    yield make
    for made in opened:
        made.close()


@pytest.fixture
def kc(daphne_server: LiveServer, tmp_path: Path) -> Callable[[str], Kubectl]:
    def make(token: str) -> Kubectl:
        home = tmp_path / f"kubectl-{abs(hash(token))}"
        return Kubectl(daphne_server.https_url, token, daphne_server.ca_pem, home)

    return make


def test_it_refuses_status_writes_from_editors_and_project_admins(
    daphne_server: LiveServer, tokens: dict[str, str], client: Callable[..., httpx.Client]
) -> None:
    alice, dave = client(tokens["alice"]), client(tokens["dave"])
    created = dave.post(DEMO, json=manifest("forged"))
    assert created.status_code == 201, created.text
    before = created.json()
    answers: list[httpx.Response] = []

    def forge(index: int) -> None:
        who = (dave, alice)[index % 2]
        for _ in range(10):
            answers.append(who.patch(f"{DEMO}/forged/status", json=FAKE_READY, headers=MERGE))

    with livez_stays_up(daphne_server.url):
        run_in_threads(4, forge)
        put = dave.put(f"{DEMO}/forged/status", json={**before, **FAKE_READY})
    assert len(answers) == 40
    for response in [*answers, put]:
        assert response.status_code == 403, response.text
        body = response.json()
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
        assert 'resource "trainingruntimes/status"' in body["message"]
    refused = {response.json()["message"].split('User "')[1].split('"')[0] for response in answers}
    assert refused == {"dave", "alice"}
    # Nothing was written: the object, its revision and its phase are what the create left.
    after = dave.get(f"{DEMO}/forged").json()
    assert after == before
    assert after["status"]["phase"] == "Pending"
    # The editor's own write (the create, acknowledged) is still there, and editing still works.
    labelled = dave.patch(
        f"{DEMO}/forged", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE
    )
    assert labelled.status_code == 200


def test_the_controller_writes_status_as_its_own_service_account(
    daphne_server: LiveServer, tokens: dict[str, str], client: Callable[..., httpx.Client]
) -> None:
    dave = client(tokens["dave"])
    assert dave.post(DEMO, json=manifest("verified-by-controller")).status_code == 201
    with livez_stays_up(daphne_server.url):
        printed = manage(daphne_server, "runcontroller", "--once")
    assert "demo/verified-by-controller:" in printed
    # The controller made its account and keeps its token beside the data, readable by it only.
    token_file = daphne_server.data_dir / "controller-token"
    assert oct(os.stat(token_file).st_mode & 0o777) == "0o600"
    controller_token = token_file.read_text().strip()
    written = dave.get(f"{DEMO}/verified-by-controller").json()
    [condition] = [c for c in written["status"]["conditions"] if c["type"] == "Verified"]
    assert written["status"]["observedGeneration"] == 1
    assert condition["observedGeneration"] == 1
    # Through the API, the same identity may write status (and a platform admin may) ...
    controller = client(controller_token)
    ready = controller.patch(
        f"{DEMO}/verified-by-controller/status",
        json={"status": {"phase": "Ready", "observedGeneration": 1}},
        headers=MERGE,
    )
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"]["phase"] == "Ready"
    assert dave.get(f"{DEMO}/verified-by-controller").json()["status"]["phase"] == "Ready"
    # ... but nothing else: it reads every project and writes no spec.
    refused = controller.patch(
        f"{DEMO}/verified-by-controller", json={"spec": {"task": "DPO"}}, headers=MERGE
    )
    assert refused.status_code == 403
    assert f'User "{CONTROLLER}" cannot patch' in refused.json()["message"]
    assert controller.get("/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes").is_success
    root = client(tokens["root"])
    failed = root.patch(
        f"{DEMO}/verified-by-controller/status",
        json={"status": {"phase": "Failed", "observedGeneration": 1}},
        headers=MERGE,
    )
    assert failed.status_code == 200


def can_i(kubectl: Kubectl, *args: str) -> tuple[int, str]:
    result = kubectl("auth", "can-i", *args)
    assert result.returncode in {0, 1}, str(result)
    assert "WARNING" not in result.stderr.upper(), str(result)
    return result.returncode, result.stdout.strip()


def test_kubectl_auth_can_i_agrees(
    daphne_server: LiveServer, tokens: dict[str, str], kc: Callable[[str], Kubectl]
) -> None:
    status = ("patch", "trainingruntimes", "--subresource=status", "-n", "demo")
    assert can_i(kc(tokens["alice"]), *status) == (1, "no")
    assert can_i(kc(tokens["dave"]), *status) == (1, "no")
    assert can_i(kc(tokens["root"]), *status) == (0, "yes")
    # kubectl reads TYPE/NAME: `trainingruntimes/status` asks about the runtime named `status`,
    # which alice (project admin) may patch like any other of hers; only root may write status.
    assert can_i(kc(tokens["root"]), "patch", "trainingruntimes/status", "-n", "demo") == (0, "yes")
    assert can_i(kc(tokens["alice"]), "patch", "trainingruntimes/status", "-n", "demo") == (
        0,
        "yes",
    )
    # The same declarations answer for everything else alice may (or may not) do.
    assert can_i(kc(tokens["alice"]), "patch", "trainingruntimes", "-n", "demo") == (0, "yes")
    assert can_i(kc(tokens["alice"]), "get", "tr", "--subresource=status", "-n", "demo") == (
        0,
        "yes",
    )
    assert can_i(kc(tokens["bob"]), "patch", "trainingruntimes", "-n", "demo") == (1, "no")
    assert can_i(kc(tokens["alice"]), "create", "trainingruntimes", "-n", "nodus") == (1, "no")
    assert can_i(kc(tokens["charlie"]), "get", "/livez") == (0, "yes")
