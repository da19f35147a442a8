"""Kubeconfigs: a fresh token inside, our certificate as the CA, the user's own project first."""

from __future__ import annotations

import base64
from typing import Any

import yaml
from django.conf import settings

from runtimes.accounts.kubeconfig import kubeconfig
from runtimes.accounts.tls import ensure_certificate
from runtimes.accounts.tokens import user_for


def test_it_carries_a_working_token_and_trusts_our_certificate(actors: dict[str, Any]) -> None:
    _, cert = ensure_certificate(settings.DATA_DIR / "tls")
    config = yaml.safe_load(kubeconfig(actors["alice"], server="https://127.0.0.1:8443"))
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:8443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == cert.read_bytes()
    token = config["users"][0]["user"]["token"]
    user = user_for(token)
    assert user is not None
    assert user.get_username() == "alice"
    assert config["contexts"][0]["context"]["namespace"] == "demo"


def test_it_points_a_reader_at_the_managed_catalog(actors: dict[str, Any]) -> None:
    config = yaml.safe_load(kubeconfig(actors["charlie"], server="https://127.0.0.1:8443"))
    assert config["contexts"][0]["context"]["namespace"] == "nodus"


def test_it_trusts_the_proxy_behind_a_public_url(actors: dict[str, Any], settings: Any) -> None:
    settings.NODUS_PUBLIC_URL = "https://nodus.example"
    config = yaml.safe_load(kubeconfig(actors["alice"]))
    cluster = config["clusters"][0]["cluster"]
    assert cluster == {"server": "https://nodus.example"}
