"""The invalid-manifest corpus over HTTP: each case POSTed as kubectl create would send it.

Every case answers 422 Invalid whose causes are exactly the expected (field, reason) pairs, with
kube's message prefix, and stores nothing: no object, no event, the same revision. A case that
moves the object into another project is sent to that project's URL, as `kubectl create -f`
does, and answers what kube answers there (the project does not exist: 404).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from runtimes.storage import store
from runtimes.storage.models import Event, Membership, Project, Role, StoredObject
from tests.invalid_manifests import base, cases, manifest
from tests.support.api import GV, ApiClient

pytestmark = pytest.mark.django_db

CASES = cases()
PROJECT = base()["metadata"]["namespace"]


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient], actors: dict[str, Any]) -> ApiClient:
    project = Project.objects.create(name=PROJECT)
    Membership.objects.create(project=project, user=actors["alice"], role=Role.EDITOR)
    return api("alice")


def test_it_creates_the_base_manifest(alice: ApiClient) -> None:
    response = alice.post(f"{GV}/namespaces/{PROJECT}/trainingruntimes", base())
    assert response.status_code == 201, response.json_body
    assert response.json_body["metadata"]["finalizers"] == ["nodus.dev/catalog"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_it_refuses_each_invalid_manifest_and_stores_nothing(
    alice: ApiClient, case: dict[str, Any]
) -> None:
    body = manifest(case)
    namespace = (body.get("metadata") or {}).get("namespace") or PROJECT
    before = (store.current_revision(), Event.objects.count(), StoredObject.objects.count())
    response = alice.post(f"{GV}/namespaces/{namespace}/trainingruntimes", body)
    status = response.json_body
    assert status["kind"] == "Status"
    if namespace != PROJECT:
        assert response.status_code == 404
        assert status["message"] == f'namespaces "{namespace}" not found'
    else:
        assert response.status_code == 422, status
        assert status["reason"] == "Invalid"
        name = (body.get("metadata") or {}).get("name") or ""
        assert status["message"].startswith(f'TrainingRuntime.nodus.dev "{name}" is invalid: ')
        assert status["details"]["kind"] == "TrainingRuntime"
        causes = status["details"]["causes"]
        got = Counter((c["field"], c["reason"]) for c in causes)
        expected = Counter((e["field"], e["reason"]) for e in case["expect"])
        assert got == expected, causes
        for cause in causes:
            assert cause["message"]
            # The message is also in the summary, prefixed by its field as kube prints it.
            assert f"{cause['field']}: {cause['message']}" in status["message"]
    assert (store.current_revision(), Event.objects.count(), StoredObject.objects.count()) == before
