"""Fixtures of the console's view tests."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.console import live
from runtimes.storage.models import Project, RevisionCounter
from runtimes.watch import hub
from tests.support.api import runtime_manifest
from tests.support.console import managed_catalog, put_runtime


@pytest.fixture
def catalog_data(actors: dict[str, Any]) -> dict[str, Any]:
    """alice's demo project holds two runtimes; the managed project holds the whole catalog."""
    Project.objects.get_or_create(name="nodus")
    Project.objects.get_or_create(name="secret")
    for manifest in managed_catalog():
        put_runtime("nodus", manifest, phase="Ready")
    sft = runtime_manifest(
        "sft-demo",
        defaults={"resources": {"gpu": {"type": ["H100"], "count": 1}}},
        estimate={"secondsPerStep": {"h100-80g": 0.5}},
        presets=[
            {
                "model": "Qwen/Qwen3-0.6B",
                "method": "LoRA",
                "resources": {"gpu": {"type": ["H100"], "count": 1}},
            }
        ],
    )
    put_runtime("demo", sft, phase="Ready")
    put_runtime("demo", runtime_manifest("eval-demo", task="Evaluate", modes=["Evaluate"]))
    put_runtime("secret", runtime_manifest("hidden-runtime"))
    return actors


@pytest.fixture
def revision_counter(transactional_db: Any) -> None:
    """For the live (websocket) tests: a transactional test before may have flushed the
    revision counter's row the migration created."""
    RevisionCounter.objects.get_or_create(pk=1)


@pytest.fixture
def fresh_hub() -> Any:
    """A hub started afresh for the test, and no render shared from an earlier test's store
    (whose revisions a flushed database numbers again from the start)."""
    hub.shutdown()
    live.forget_renders()
    yield
    hub.shutdown()
