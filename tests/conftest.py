"""Shared fixtures: named actors (alice owns `demo`, bob views it, charlie is an outsider, root
is a platform admin) and API clients that authenticate as each with a real bearer token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from runtimes.accounts.tokens import create_token
from runtimes.storage.models import Membership, Project, Role

GV = "/apis/nodus.dev/v1beta1"


class ApiClient:
    """A Django test client that speaks JSON and sends a bearer token."""

    def __init__(self, token: str | None) -> None:
        self.client = Client()
        self.headers: dict[str, str] = {"Authorization": f"Bearer {token}"} if token else {}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        **headers: str,
    ) -> Any:
        data = (
            b"" if body is None else (body if isinstance(body, bytes | str) else orjson.dumps(body))
        )
        response = self.client.generic(
            method, path, data=data, content_type=content_type, headers={**self.headers, **headers}
        )
        response.json_body = (
            orjson.loads(response.content)
            if response.content and response.get("Content-Type", "").startswith("application/json")
            else None
        )
        return response

    def get(self, path: str, **headers: str) -> Any:
        return self.request("GET", path, **headers)

    def post(self, path: str, body: Any, **kw: Any) -> Any:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> Any:
        return self.request("PUT", path, body, **kw)

    def patch(
        self, path: str, body: Any, content_type: str = "application/merge-patch+json", **kw: Any
    ) -> Any:
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("DELETE", path, body, **kw)


@pytest.fixture
def actors(db: Any) -> dict[str, Any]:
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-pass")
    bob = users.create_user("bob", password="bob-pass")
    charlie = users.create_user("charlie", password="charlie-pass")
    root = users.create_user("root", password="root-pass", is_staff=True, is_superuser=True)
    demo = Project.objects.create(name="demo")
    Membership.objects.create(project=demo, user=alice, role=Role.ADMIN)
    Membership.objects.create(project=demo, user=bob, role=Role.VIEWER)
    return {"alice": alice, "bob": bob, "charlie": charlie, "root": root, "demo": demo}


@pytest.fixture
def api(actors: dict[str, Any]) -> Callable[[str | None], ApiClient]:
    """api("alice") is a client for alice; api(None) is anonymous."""
    tokens: dict[str, str] = {}

    def make(name: str | None) -> ApiClient:
        if name is None:
            return ApiClient(None)
        if name not in tokens:
            tokens[name] = create_token(actors[name], "test")[1]
        return ApiClient(tokens[name])

    return make


def runtime_manifest(
    name: str = "sft-demo", namespace: str | None = None, **spec: Any
) -> dict[str, Any]:
    """A small valid TrainingRuntime."""
    body: dict[str, Any] = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"app": "trainer"}},
        "spec": {
            "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
            **spec,
        },
    }
    if namespace:
        body["metadata"]["namespace"] = namespace
    return body
