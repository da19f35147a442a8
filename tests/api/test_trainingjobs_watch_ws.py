"""TrainingJobs over the API's WebSocket watch, as every kind: the HTTP watch's events as text
frames (against a live daphne whose seeded managed runtimes jobs compile against)."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from websockets.sync.client import connect

JOBS = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs"


def job(name: str, tag: str) -> dict[str, Any]:
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "labels": {"t": tag}},
        "spec": {
            "runtimeRef": {"name": "sft-qwen3", "namespace": "nodus"},
            "model": "Qwen/Qwen3-0.6B",
            "method": "LoRA",
            "data": "hf://datasets/nodus/alpaca",
            "steps": 10,
        },
    }


def test_it_streams_job_events_over_a_websocket(tight_server: Any) -> None:
    tag = uuid.uuid4().hex[:10]
    with tight_server.client("alice") as alice:
        created = alice.post(JOBS, json=job(f"ws-{tag}", tag))
        assert created.status_code == 201, created.text
        url = (
            tight_server.url.replace("http://", "ws://") + f"{JOBS}?watch=1&labelSelector=t%3D{tag}"
        )
        headers = {"Authorization": f"Bearer {tight_server.tokens['alice']}"}
        with connect(url, origin=tight_server.url, additional_headers=headers) as ws:
            first = orjson.loads(ws.recv(timeout=10))
            assert first == {"type": "ADDED", "object": created.json()}
            deleted = alice.delete(f"{JOBS}/ws-{tag}")
            assert deleted.status_code == 200, deleted.text
            second = orjson.loads(ws.recv(timeout=10))
            assert second["type"] == "DELETED"
            assert second["object"]["metadata"]["name"] == f"ws-{tag}"
