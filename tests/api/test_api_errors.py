"""Every error leaves the API as one metav1.Status with docs, fix and requestId.

The requestId equals the X-Request-Id header and is in the request's log line; an unexpected
exception becomes a 500 Status that leaks nothing of the traceback; a refused write leaves no
object, no event and the same revision behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from runtimes.api import listing
from runtimes.apimachinery import errors
from runtimes.storage import store
from runtimes.storage.models import Event, StoredObject
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"
THREE_MIB = 3 * 1024 * 1024

# (method, path, body, content type, extra headers, expected code, expected reason)
CASES: list[tuple[str, str, Any, str, dict[str, str], int, str]] = [
    ("GET", f"{GV}/nope", None, "application/json", {}, 404, "NotFound"),
    ("GET", "/apis/other.io/v1", None, "application/json", {}, 404, "NotFound"),
    ("GET", "/api/v1/pods", None, "application/json", {}, 404, "NotFound"),
    ("GET", "/openapi/v2", None, "application/json", {}, 404, "NotFound"),
    ("GET", f"{TRS}/missing", None, "application/json", {}, 404, "NotFound"),
    (
        "POST",
        f"{TRS}/sft-demo/status",
        runtime_manifest(),
        "application/json",
        {},
        405,
        "MethodNotAllowed",
    ),
    ("PUT", TRS, runtime_manifest(), "application/json", {}, 400, "BadRequest"),
    ("PATCH", TRS, {}, "application/merge-patch+json", {}, 400, "BadRequest"),
    (
        "POST",
        f"{GV}/trainingruntimes",
        runtime_manifest(),
        "application/json",
        {},
        403,
        "Forbidden",
    ),
    ("DELETE", f"{TRS}/sft-demo/status", None, "application/json", {}, 405, "MethodNotAllowed"),
    (
        "GET",
        TRS,
        None,
        "application/json",
        {"Accept": "application/vnd.kubernetes.protobuf"},
        406,
        "NotAcceptable",
    ),
    (
        "GET",
        TRS,
        None,
        "application/json",
        {"Accept": "application/json;as=Tabel;v=v1;g=meta.k8s.io"},
        406,
        "NotAcceptable",
    ),
    ("POST", TRS, b"x" * (THREE_MIB + 1), "application/json", {}, 413, "RequestEntityTooLarge"),
    ("POST", TRS, b"name: x", "text/plain", {}, 415, "UnsupportedMediaType"),
    ("POST", TRS, b'{"apiVersion": ', "application/json", {}, 400, "BadRequest"),
    ("POST", TRS, b"[1, 2]", "application/json", {}, 400, "BadRequest"),
    (
        "POST",
        TRS,
        {**runtime_manifest(), "kind": "Pod"},
        "application/json",
        {},
        422,
        "Invalid",
    ),
    (
        "POST",
        TRS,
        {**runtime_manifest(), "apiVersion": "v1"},
        "application/json",
        {},
        400,
        "BadRequest",
    ),
    (
        "POST",
        TRS,
        runtime_manifest(namespace="elsewhere"),
        "application/json",
        {},
        400,
        "BadRequest",
    ),
    ("GET", f"{TRS}?labelSelector=a+in+()", None, "application/json", {}, 400, "BadRequest"),
    ("POST", TRS, runtime_manifest(task="Slurm"), "application/json", {}, 422, "Invalid"),
    ("POST", TRS, runtime_manifest(), "application/json", {}, 409, "AlreadyExists"),
]


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    client = api("alice")
    assert client.post(TRS, runtime_manifest()).status_code == 201
    return client


def assert_status(response: Any, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body: dict[str, Any] = response.json_body
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert reason in errors.REASONS
    assert body["message"]
    assert body["docs"].endswith(f"/docs/errors/{reason}")
    assert body["fix"]
    assert body["requestId"] == response["X-Request-Id"]
    assert len(body["requestId"]) >= 16
    return body


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "headers", "code", "reason"),
    CASES,
    ids=[f"{c[0]} {c[1][-40:]} {c[5]}" for c in CASES],
)
def test_it_answers_every_error_as_a_status_with_docs_fix_and_request_id(
    alice: ApiClient,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: Any,
    content_type: str,
    headers: dict[str, str],
    code: int,
    reason: str,
) -> None:
    before = (store.current_revision(), Event.objects.count(), StoredObject.objects.count())
    with caplog.at_level(logging.INFO, logger="nodus.request"):
        response = alice.request(method, path, body, content_type=content_type, **headers)
    status = assert_status(response, code, reason)
    lines = [r.getMessage() for r in caplog.records if r.name == "nodus.request"]
    assert any(f"requestId={status['requestId']}" in line for line in lines), lines
    assert (store.current_revision(), Event.objects.count(), StoredObject.objects.count()) == before


def test_it_answers_anonymous_requests_with_unauthorized(
    api: Callable[[str | None], ApiClient],
) -> None:
    response = api(None).get(TRS)
    assert_status(response, 401, "Unauthorized")


def test_it_answers_forbidden_with_kubes_message(api: Callable[[str | None], ApiClient]) -> None:
    body = assert_status(api("charlie").get(f"{TRS}/x"), 403, "Forbidden")
    assert body["message"] == (
        'trainingruntimes.nodus.dev "x" is forbidden: User "charlie" cannot get resource '
        '"trainingruntimes" in API group "nodus.dev" in the namespace "demo"'
    )


def test_it_hides_the_traceback_of_an_unexpected_error(
    alice: ApiClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr(listing, "cached_object", explode)  # a GET's read
    with caplog.at_level(logging.INFO, logger="nodus.request"):
        response = alice.get(f"{TRS}/sft-demo")
    body = assert_status(response, 500, "InternalError")
    assert b"secret-internal-detail" not in response.content
    assert b"Traceback" not in response.content
    # The traceback is in the log, findable by the requestId the client was given.
    logged = [r for r in caplog.records if body["requestId"] in r.getMessage()]
    assert any(r.exc_info and "secret-internal-detail" in str(r.exc_info[1]) for r in logged)


def test_it_leaves_nothing_behind_when_an_update_is_refused(alice: ApiClient) -> None:
    current = alice.get(f"{TRS}/sft-demo").json_body
    before = (store.current_revision(), Event.objects.count())
    broken = {**current, "spec": {**current["spec"], "launcher": "Slurm"}}
    assert alice.put(f"{TRS}/sft-demo", broken).status_code == 422
    assert alice.patch(f"{TRS}/sft-demo", {"spec": {"image": "latest"}}).status_code == 422
    assert (store.current_revision(), Event.objects.count()) == before
    assert alice.get(f"{TRS}/sft-demo").json_body == current


def test_it_names_every_invalid_field_with_kubes_cause_shape(alice: ApiClient) -> None:
    manifest = runtime_manifest("bad", launcher="Slurm")
    del manifest["spec"]["image"]
    body = assert_status(alice.post(TRS, manifest), 422, "Invalid")
    assert body["details"]["kind"] == "TrainingRuntime"
    assert body["details"]["group"] == "nodus.dev"
    assert body["details"]["name"] == "bad"
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert causes["spec.image"]["reason"] == "FieldValueRequired"
    assert causes["spec.launcher"]["reason"] == "FieldValueNotSupported"
    assert causes["spec.launcher"]["message"].startswith('Unsupported value: "Slurm"')
    assert body["message"].startswith('TrainingRuntime.nodus.dev "bad" is invalid: [')
    assert "spec.image" in body["fix"]


def test_it_gives_retry_after_with_too_many_requests() -> None:
    error = errors.ApiError("TooManyRequests", "slow down", retry_after=3)
    assert error.status()["details"]["retryAfterSeconds"] == 3
    assert error.code == 429
