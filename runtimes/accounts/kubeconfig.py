"""Kubeconfigs that real kubectl accepts, with a fresh API token inside."""

from __future__ import annotations

import base64
import os

import yaml
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from runtimes.accounts import access
from runtimes.accounts.tls import CERT_FILE
from runtimes.accounts.tokens import create_token


def default_project(user: access.User) -> str:
    writable = access.writable_projects(user)
    return (
        writable[0] if writable and not access.is_platform_admin(user) else access.MANAGED_PROJECT
    )


def api_server(host: str = "") -> str:
    """Where kubectl should go: $NODUS_PUBLIC_URL, else the HTTPS port `manage.py serve` opens
    (client-go sends bearer tokens only over TLS). `host` is the name the user reached us by."""
    if settings.NODUS_PUBLIC_URL:
        return settings.NODUS_PUBLIC_URL
    host = host or os.environ.get("HOST", "127.0.0.1")
    if host in {"0.0.0.0", "::"}:  # noqa: S104
        host = "127.0.0.1"
    return f"https://{host}:{os.environ.get('TLS_PORT', '8443')}"


def server_certificate() -> bytes | None:
    path = settings.DATA_DIR / "tls" / CERT_FILE
    return path.read_bytes() if path.exists() else None


def kubeconfig(
    user: AbstractBaseUser,
    server: str = "",
    token_name: str = "kubeconfig",  # noqa: S107
    host: str = "",
) -> str:
    """A kubeconfig for `user`; over https to our own port it trusts our self-signed certificate."""
    server = server or api_server(host)
    ca_pem = (
        server_certificate()
        if server.startswith("https://") and not settings.NODUS_PUBLIC_URL
        else None
    )
    _row, token = create_token(user, token_name)
    name = "nodus"
    cluster: dict[str, str] = {"server": server.rstrip("/")}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user.get_username(), "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {
                    "cluster": name,
                    "user": user.get_username(),
                    "namespace": default_project(user),
                },
            }
        ],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)
