"""Registry authentication: challenge parsing, Basic (htpasswd) and Bearer token flows."""

import httpx
import pytest

from runtimes.controller.oci.auth import Challenge, Credential, fetch_token, parse_www_authenticate
from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.errors import RegistryRefused, RegistryUnauthorized
from tests.support.registry import TOKEN_SERVICE, USERNAME, RunningRegistry, TokenServer


def client_for(host: str, credential: Credential | None) -> RegistryClient:
    credentials = {host: credential} if credential else {}
    return RegistryClient(
        RegistrySettings(allowed_registries=frozenset({host}), credentials=credentials)
    )


def test_it_parses_a_bearer_challenge_with_commas_inside_the_scope() -> None:
    header = (
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:samalba/my-app:pull,push"'
    )
    assert parse_www_authenticate(header) == [
        Challenge(
            "bearer",
            {
                "realm": "https://auth.docker.io/token",
                "service": "registry.docker.io",
                "scope": "repository:samalba/my-app:pull,push",
            },
        )
    ]


def test_it_parses_several_challenges_unquoted_values_and_escapes() -> None:
    header = (
        'Basic realm="say \\"hi\\"", Bearer Realm=https://r.example/t , error=insufficient_scope'
    )
    assert parse_www_authenticate(header) == [
        Challenge("basic", {"realm": 'say "hi"'}),
        Challenge("bearer", {"realm": "https://r.example/t", "error": "insufficient_scope"}),
    ]
    assert parse_www_authenticate("") == []


def test_it_never_sends_credentials_to_a_plain_http_realm_off_loopback() -> None:
    challenge = Challenge("bearer", {"realm": "http://auth.example.com/token", "service": "s"})
    with httpx.Client() as http, pytest.raises(RegistryRefused, match="plain HTTP"):
        fetch_token(http, challenge, ["repository:a:pull"], Credential("alice", "pw"))


@pytest.fixture
def basic(basic_auth_registry: RunningRegistry) -> RunningRegistry:
    return basic_auth_registry


def test_it_pushes_and_resolves_with_basic_auth(basic: RunningRegistry) -> None:
    assert basic.password
    with client_for(basic.host, Credential(USERNAME, basic.password)) as client:
        digest = build_image(client, basic.ref("team/sft:v1"), user="trainer")
        resolved = client.resolve(basic.ref("team/sft:v1"))
    assert (resolved.digest, resolved.user) == (digest, "trainer")
    # The registry really demands the password.
    assert httpx.get(f"http://{basic.host}/v2/team/sft/manifests/v1").status_code == 401


@pytest.mark.parametrize("credential", [None, Credential(USERNAME, "wrong")])
def test_it_reports_refused_basic_credentials(
    basic: RunningRegistry, credential: Credential | None
) -> None:
    with client_for(basic.host, credential) as client, pytest.raises(RegistryUnauthorized):
        client.resolve(basic.ref("team/sft:v1"))


def test_it_follows_the_bearer_token_flow(
    token_registry: tuple[RunningRegistry, TokenServer],
) -> None:
    registry, tokens = token_registry
    with client_for(registry.host, Credential(USERNAME, tokens.password)) as client:
        digest = build_image(client, registry.ref("team/bearer:v1"), user="trainer")
        resolved = client.resolve(registry.ref("team/bearer:v1"))
    assert (resolved.digest, resolved.user) == (digest, "trainer")
    assert tokens.requests, "the token server was never asked"
    for request in tokens.requests:
        assert request["authenticated"]
        assert request["query"]["service"] == [TOKEN_SERVICE]
    scopes = {scope for r in tokens.requests for scope in r["query"]["scope"]}
    assert "repository:team/bearer:pull,push" in scopes
    assert "repository:team/bearer:pull" in scopes


@pytest.mark.parametrize("credential", [None, Credential(USERNAME, "wrong")])
def test_it_reports_a_token_that_grants_nothing(
    token_registry: tuple[RunningRegistry, TokenServer],
    credential: Credential | None,
) -> None:
    registry, tokens = token_registry
    with client_for(registry.host, Credential(USERNAME, tokens.password)) as owner:
        build_image(owner, registry.ref("team/private:v1"))
    with client_for(registry.host, credential) as client, pytest.raises(RegistryUnauthorized):
        client.resolve(registry.ref("team/private:v1"))
