"""API test clients and manifests: a JSON test client with a bearer token, a small valid runtime."""

from __future__ import annotations

from typing import Any

import orjson
from django.test import Client

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


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    """A TrainingJob of sft-qwen3 (managed, in project nodus) that compiles, with `spec` on top."""
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "sft-qwen3", "namespace": "nodus"},
            "model": "Qwen/Qwen3-0.6B",
            "method": "LoRA",
            "data": "hf://datasets/nodus/alpaca",
            "steps": 100,
            **spec,
        },
    }
