"""Tables and PartialObjectMetadata are encoded once per object revision and then reused.

kube's cacher keeps each object's serialisations (cachingObject); ours are kept on the watch
cache's entry, so a second `kubectl get` of the same objects writes the kept bytes out.
`nodus_printed_encodings_total` counts, per form, the encodings made and the ones reused, so
each test knows exactly which answers did the work. What is reused must read as freshly made.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from runtimes.api import tables
from runtimes.apimachinery.durations import human_age
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from tests.api.test_metrics import scrape
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

DEMO = f"{GV}/namespaces/demo/trainingruntimes"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
NAMES = ("r0", "r1", "r2", "r3", "r4")


@pytest.fixture
def alice(actors: dict[str, Any], api: Callable[[str | None], ApiClient]) -> ApiClient:
    rt = lookup("trainingruntimes")
    for name in NAMES:
        store.create(rt, "demo", runtime_manifest(name, task="SFT"))
    return api("alice")


def printed() -> dict[tuple[str, bool], float]:
    """Encodings of trainingruntimes so far, by (form, reused)."""
    samples = scrape()
    return {
        (form, reused): samples.get(
            (
                "nodus_printed_encodings_total",
                frozenset(
                    {
                        "resource": "trainingruntimes",
                        "form": form,
                        "reused": "true" if reused else "false",
                    }.items()
                ),
            ),
            0.0,
        )
        for form in ("row", "metadata")
        for reused in (False, True)
    }


def undated(table: dict[str, Any]) -> dict[str, Any]:
    """The Table with each row's Age cell (the last) blanked: it moves with the clock."""
    rows = [{**row, "cells": [*row["cells"][:-1], None]} for row in table["rows"]]
    return {**table, "rows": rows}


def tally(rows_made: int, rows_reused: int, meta_made: int, meta_reused: int) -> dict[Any, float]:
    return {
        ("row", False): rows_made,
        ("row", True): rows_reused,
        ("metadata", False): meta_made,
        ("metadata", True): meta_reused,
    }


def counted(client: ApiClient, path: str, accept: str) -> tuple[Any, dict[tuple[str, bool], float]]:
    """The answer's JSON and the encodings it made and reused."""
    before = printed()
    response = client.get(path, Accept=accept)
    assert response.status_code == 200, response.content
    after = printed()
    return response.json_body, {k: after[k] - before[k] for k in after}


def test_a_second_table_list_reuses_every_row_and_reads_the_same(alice: ApiClient) -> None:
    first, made = counted(alice, DEMO, TABLE)
    assert made == tally(5, 0, 5, 0)
    asked = datetime.now(UTC)
    second, reused = counted(alice, DEMO, TABLE)
    answered = datetime.now(UTC)
    assert reused == tally(0, 5, 0, 5)
    assert undated(second) == undated(first)
    # And what was kept reads as the rows printed afresh from the objects themselves.
    rt = lookup("trainingruntimes")
    objects = [store.get(rt, "demo", name) for name in NAMES]
    expected = tables.table(rt, objects, "v1", first["metadata"], "Metadata")
    assert undated(first) == undated(expected)
    # Age is never kept: each answer prints it from the creation time, as at that moment.
    seconds = int((answered - asked).total_seconds()) + 1
    moments = [asked + timedelta(seconds=n) for n in range(seconds)] + [answered]
    for row, obj in zip(second["rows"], objects, strict=True):
        created = obj["metadata"]["creationTimestamp"]
        assert row["cells"][-1] in {human_age(created, moment) for moment in moments}


def test_a_new_revision_is_encoded_again_and_the_rest_reused(alice: ApiClient) -> None:
    counted(alice, DEMO, TABLE)
    rt = lookup("trainingruntimes")
    changed = store.get(rt, "demo", "r2")
    changed["spec"]["task"] = "DPO"
    store.update(rt, "demo", "r2", changed)
    table, made = counted(alice, DEMO, TABLE)
    assert made == tally(1, 4, 1, 4)
    tasks = {row["cells"][0]: row["cells"][1] for row in table["rows"]}
    assert tasks == {"r0": "SFT", "r1": "SFT", "r2": "DPO", "r3": "SFT", "r4": "SFT"}
    revisions = {
        row["object"]["metadata"]["name"]: row["object"]["metadata"]["resourceVersion"]
        for row in table["rows"]
    }
    assert revisions["r2"] == store.get(rt, "demo", "r2")["metadata"]["resourceVersion"]


def test_each_include_object_writes_its_own_object_from_the_kept_row(alice: ApiClient) -> None:
    counted(alice, DEMO, TABLE)
    whole, made = counted(alice, f"{DEMO}?includeObject=Object", TABLE)
    assert made == tally(0, 5, 0, 0)  # the object is the entry's text, as stored
    assert [row["object"]["kind"] for row in whole["rows"]] == ["TrainingRuntime"] * 5
    assert whole["rows"][0]["object"]["spec"]["task"] == "SFT"
    bare, made = counted(alice, f"{DEMO}?includeObject=None", TABLE)
    assert made == tally(0, 5, 0, 0)
    assert [row["object"] for row in bare["rows"]] == [None] * 5


def test_partial_object_metadata_lists_and_gets_reuse_the_kept_metadata(
    alice: ApiClient,
) -> None:
    first, made = counted(alice, DEMO, PARTIAL_LIST)
    assert made == tally(0, 0, 5, 0)
    second, reused = counted(alice, DEMO, PARTIAL_LIST)
    assert reused == tally(0, 0, 0, 5)
    assert second == first
    assert [item["kind"] for item in first["items"]] == ["PartialObjectMetadata"] * 5
    one, reused = counted(alice, f"{DEMO}/r3", PARTIAL)
    assert reused == tally(0, 0, 0, 1)
    assert one == first["items"][3]
    table, reused = counted(alice, f"{DEMO}/r3", TABLE)
    assert reused == tally(1, 0, 0, 1)  # no row was made for r3 yet; its metadata was
    assert table["rows"][0]["object"] == first["items"][3]
    assert table["metadata"]["resourceVersion"] == one["metadata"]["resourceVersion"]
