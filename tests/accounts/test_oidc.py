"""ID tokens from a real provider as API bearer tokens: kube-apiserver's checks, through HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.storage.models import Membership, Role
from tests.support.api import ApiClient
from tests.support.oidc import Provider, SigningKey, stop

RUNTIMES = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.fixture
def readers(actors: dict[str, Any]) -> Membership:
    """The provider's group `ml-readers` may read `demo`."""
    return Membership.objects.create(
        project=actors["demo"], group="oidc:ml-readers", role=Role.VIEWER
    )


def test_it_accepts_a_token_whose_group_is_bound(provider: Provider, readers: Membership) -> None:
    client = ApiClient(provider.id_token("dana", ["ml-readers"]))
    response = client.get(RUNTIMES)
    assert response.status_code == 200, response.content


def test_it_refuses_a_group_it_does_not_bind(provider: Provider, readers: Membership) -> None:
    client = ApiClient(provider.id_token("erin", ["other"]))
    assert client.get(RUNTIMES).status_code == 403


def test_it_refuses_a_token_once_its_group_loses_the_binding(
    provider: Provider, readers: Membership
) -> None:
    client = ApiClient(provider.id_token("dana", ["ml-readers"]))
    assert client.get(RUNTIMES).status_code == 200
    readers.delete()
    assert client.get(RUNTIMES).status_code == 403


def test_it_names_the_user_and_groups_with_their_prefixes(provider: Provider, actors: Any) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = ApiClient(provider.id_token("dana", ["ml-readers"])).post(WHOAMI, body)
    assert response.status_code == 201, response.content
    user = response.json()["status"]["userInfo"]
    assert user["username"] == "oidc:dana"


@pytest.mark.parametrize(
    "change",
    [
        {"lifetime": -1},
        {"aud": "someone-else"},
    ],
    ids=["expired", "wrong-audience"],
)
def test_it_refuses_an_invalid_token_with_a_status(
    provider: Provider, readers: Membership, change: dict[str, Any]
) -> None:
    response = ApiClient(provider.id_token("dana", ["ml-readers"], **change)).get(RUNTIMES)
    assert response.status_code == 401
    assert response.json()["kind"] == "Status"


def test_it_refuses_a_token_from_another_issuer(provider: Provider, readers: Membership) -> None:
    token = provider.id_token("dana", ["ml-readers"], iss="https://elsewhere.example")
    assert ApiClient(token).get(RUNTIMES).status_code == 401
    assert provider.jwks_fetches == 0


def test_it_follows_a_key_rotation(provider: Provider, readers: Membership) -> None:
    assert ApiClient(provider.id_token("dana", ["ml-readers"])).get(RUNTIMES).status_code == 200
    old = provider.rotate()
    assert ApiClient(provider.id_token("dana", ["ml-readers"])).get(RUNTIMES).status_code == 200
    assert provider.jwks_fetches == 2
    stale = provider.id_token("dana", ["ml-readers"], key=old)
    assert ApiClient(stale).get(RUNTIMES).status_code == 401


def test_it_refetches_keys_at_most_once_per_period_for_unknown_kids(
    provider: Provider, readers: Membership
) -> None:
    assert ApiClient(provider.id_token("dana", ["ml-readers"])).get(RUNTIMES).status_code == 200
    for _ in range(3):
        forged = provider.id_token("dana", ["ml-readers"], key=SigningKey.new())
        assert ApiClient(forged).get(RUNTIMES).status_code == 401
    assert provider.jwks_fetches == 2


def test_it_refuses_a_deactivated_oidc_user(provider: Provider, readers: Membership) -> None:
    client = ApiClient(provider.id_token("dana", ["ml-readers"]))
    assert client.get(RUNTIMES).status_code == 200
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="oidc:dana").update(is_active=False)
    assert client.get(RUNTIMES).status_code == 401


@pytest.mark.parametrize(
    "token",
    ["a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.", "x" * 20000 + ".a.b"],
    ids=["garbage", "empty-json", "alg-none", "huge"],
)
def test_it_answers_a_malformed_token_with_401(provider: Provider, actors: Any, token: str) -> None:
    response = ApiClient(token).get(RUNTIMES)
    assert response.status_code == 401
    assert response.json()["kind"] == "Status"


def test_a_provider_that_is_away_gives_401(provider: Provider, readers: Membership) -> None:
    token = provider.id_token("dana", ["ml-readers"])
    stop(provider)
    response = ApiClient(token).get(RUNTIMES)
    assert response.status_code == 401
    assert response.json()["kind"] == "Status"


def test_an_oversized_key_set_is_not_read(
    provider: Provider, readers: Membership, settings: Any
) -> None:
    provider.jwks_padding = settings.NODUS_OIDC_MAX_DOCUMENT_BYTES
    assert ApiClient(provider.id_token("dana", ["ml-readers"])).get(RUNTIMES).status_code == 401
    assert provider.jwks_fetches == 1
