"""Fixtures of the controller's tests: real local registries (Debian's docker-registry).

Each registry runs on a free loopback port with its own config and storage in a temp folder
(``tests.support.registry`` starts it); the module-scoped ones are shared by a module's tests,
which use distinct repositories.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.registry import (
    REGISTRY_BINARY,
    TOKEN_ISSUER,
    TOKEN_SERVICE,
    USERNAME,
    RunningRegistry,
    TokenServer,
    htpasswd_line,
    serve_token_server,
    start_registry,
)


@pytest.fixture(autouse=True)
def _admission_allows_every_registry(settings: Any) -> None:
    """Admission refuses a managed runtime from a registry off NODUS_REGISTRY_ALLOW; here the
    controller's own allow-list (`World.allowed`) is what is tested, so admission allows all,
    as if each runtime was published while its registry was allowed. A test of the setting
    itself sets it again."""
    settings.NODUS_REGISTRY_ALLOW = "*"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    """An anonymous registry shared by a module's tests (they use distinct repositories)."""
    if not REGISTRY_BINARY.exists():
        pytest.skip("needs Debian's docker-registry (apt-get install -y docker-registry)")
    running = start_registry(tmp_path_factory.mktemp("registry"))
    yield running
    running.stop()


@pytest.fixture
def stoppable_registry(tmp_path: Path) -> Iterator[RunningRegistry]:
    """A registry of this test's own, which the test may stop."""
    if not REGISTRY_BINARY.exists():
        pytest.skip("needs Debian's docker-registry (apt-get install -y docker-registry)")
    running = start_registry(tmp_path / "registry")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def basic_auth_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    if not REGISTRY_BINARY.exists():
        pytest.skip("needs Debian's docker-registry (apt-get install -y docker-registry)")
    folder = tmp_path_factory.mktemp("basic-registry")
    password = secrets.token_urlsafe(12)
    try:
        line = htpasswd_line(USERNAME, password)
    except FileNotFoundError:
        pytest.skip("needs the bcrypt module or htpasswd (apt-get install -y apache2-utils)")
    (folder / "htpasswd").write_text(line + "\n")
    auth = {"htpasswd": {"realm": "nodus-test", "path": str(folder / "htpasswd")}}
    running = start_registry(folder, auth)
    running.password = password
    yield running
    running.stop()


@pytest.fixture(scope="module")
def token_registry(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningRegistry, TokenServer]]:
    """A registry with ``auth: token`` and the token server it trusts."""
    if not REGISTRY_BINARY.exists():
        pytest.skip("needs Debian's docker-registry (apt-get install -y docker-registry)")
    folder = tmp_path_factory.mktemp("token-registry")
    tokens = TokenServer(password=secrets.token_urlsafe(12))
    httpd = serve_token_server(tokens)
    (folder / "issuer.pem").write_bytes(tokens.certificate_pem())
    auth = {
        "token": {
            "realm": tokens.url,
            "service": TOKEN_SERVICE,
            "issuer": TOKEN_ISSUER,
            "rootcertbundle": str(folder / "issuer.pem"),
        }
    }
    running = start_registry(folder, auth)
    running.password = tokens.password
    yield running, tokens
    running.stop()
    httpd.shutdown()
    httpd.server_close()
