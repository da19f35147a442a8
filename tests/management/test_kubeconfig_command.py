"""`manage.py kubeconfig`: a kubeconfig real kubectl accepts (https, our CA, a working token)."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command

from runtimes.accounts.tls import ensure_certificate
from tests.support.api import ApiClient

pytestmark = pytest.mark.django_db


def run(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("kubeconfig", *args, stdout=out, stderr=io.StringIO())
    return yaml.safe_load(out.getvalue())


def test_it_points_at_the_tls_port_and_trusts_the_servers_certificate(actors: Any) -> None:
    _key, cert = ensure_certificate(settings.DATA_DIR / "tls")
    config = run("--user", "alice")
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificate-authority-data"]) == cert.read_bytes()
    assert config["contexts"][0]["context"]["namespace"] == "demo"


def test_its_token_authenticates_against_the_api(actors: Any) -> None:
    token = run("--user", "bob")["users"][0]["user"]["token"]
    response = ApiClient(token).get("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes")
    assert response.status_code == 200


def test_it_refuses_unknown_users(actors: Any) -> None:
    with pytest.raises(CommandError, match="no active user"):
        run("--user", "mallory")


def test_it_reuses_a_valid_certificate_and_renews_one_missing_a_host(tmp_path: Any) -> None:
    first = ensure_certificate(tmp_path, ["127.0.0.1"])[1].read_bytes()
    assert ensure_certificate(tmp_path, ["127.0.0.1"])[1].read_bytes() == first
    assert ensure_certificate(tmp_path, ["nodus.example"])[1].read_bytes() != first
