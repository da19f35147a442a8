"""The error-reason registry: kube's reason-to-code mapping, and a docs page for every reason."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from runtimes.apimachinery import errors

# apimachinery pkg/api/errors: the HTTP code each StatusReason is answered with.
KUBE_CODES = {
    "BadRequest": 400,
    "Unauthorized": 401,
    "Forbidden": 403,
    "NotFound": 404,
    "MethodNotAllowed": 405,
    "NotAcceptable": 406,
    "AlreadyExists": 409,
    "Conflict": 409,
    "Gone": 410,
    "Expired": 410,
    "RequestEntityTooLarge": 413,
    "UnsupportedMediaType": 415,
    "Invalid": 422,
    "TooManyRequests": 429,
    "InternalError": 500,
    "ServiceUnavailable": 503,
    "Timeout": 504,
}
# Reasons of our own for what Go's HTTP server answers in plain text (408, 414, 431): ours leave
# the listener as a Status like every other error.
LISTENER_CODES = {
    "RequestTimeout": 408,
    "RequestURITooLong": 414,
    "RequestHeaderFieldsTooLarge": 431,
}


@pytest.mark.parametrize("reason", sorted(errors.REASONS))
def test_it_answers_each_reason_with_kubes_code(reason: str) -> None:
    codes = {**KUBE_CODES, **LISTENER_CODES}
    assert errors.REASONS[reason].code == codes[reason]
    assert errors.ApiError(reason, "x").status()["code"] == codes[reason]


@pytest.mark.parametrize("reason", sorted(errors.REASONS))
def test_it_documents_each_reason_with_a_fix(reason: str) -> None:
    entry = errors.REASONS[reason]
    assert entry.title
    assert entry.meaning
    assert entry.causes
    assert entry.fix


def test_it_refuses_an_unregistered_reason() -> None:
    with pytest.raises(ValueError, match="unregistered reason"):
        errors.ApiError("Teapot", "short and stout")


@pytest.mark.django_db
@pytest.mark.parametrize("reason", sorted(errors.REASONS))
def test_it_serves_a_docs_page_for_each_reason(reason: str, actors: dict[str, Any]) -> None:
    client = Client()
    response = client.get(f"/docs/errors/{reason}")
    if response.status_code in {301, 302}:
        client.force_login(actors["bob"])
        response = client.get(f"/docs/errors/{reason}")
    assert response.status_code == 200
    page = response.content.decode()
    assert reason in page
    assert str(errors.REASONS[reason].code) in page


@pytest.mark.django_db
def test_it_has_no_docs_page_for_an_unknown_reason() -> None:
    assert Client().get("/docs/errors/Teapot").status_code == 404
