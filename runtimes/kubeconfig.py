"""Kubeconfigs that real kubectl accepts, with a fresh API token inside."""

from __future__ import annotations

import yaml
from django.contrib.auth.models import AbstractBaseUser

from runtimes import access
from runtimes.tokens import create_token


def default_project(user: access.User) -> str:
    writable = access.writable_projects(user)
    return (
        writable[0] if writable and not access.is_platform_admin(user) else access.MANAGED_PROJECT
    )


def kubeconfig(user: AbstractBaseUser, server: str, token_name: str = "kubeconfig") -> str:  # noqa: S107
    _row, token = create_token(user, token_name)
    name = "nodus"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server.rstrip("/")}}],
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
