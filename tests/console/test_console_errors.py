"""Console error pages: a failure names the request id the log line carries."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from runtimes.console import catalog

pytestmark = pytest.mark.django_db


def test_it_names_the_request_id_on_the_server_error_page(
    actors: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(user: Any) -> Any:
        raise RuntimeError("the store is gone")

    monkeypatch.setattr(catalog, "readable_runtimes", broken)
    client = Client(raise_request_exception=False)
    client.force_login(actors["alice"])
    response = client.get("/")
    assert response.status_code == 500
    request_id = response["X-Request-Id"]
    assert request_id
    assert f'<code id="request-id">{request_id}</code>' in response.content.decode()
    assert "the store is gone" not in response.content.decode()


def test_it_sends_a_request_id_with_every_console_response(actors: dict[str, Any]) -> None:
    client = Client()
    client.force_login(actors["alice"])
    first = client.get("/account/tokens")["X-Request-Id"]
    second = client.get("/account/tokens")["X-Request-Id"]
    assert first
    assert first != second
