"""A selected list from the watch cache touches only what its narrowest requirement names.

The cache indexes label pairs, label keys and each selectable field's values (as kube's cacher
keeps indexers); `apiserver_cache_list_fetched_objects_total` counts the objects a list looked
at, by the index that chose them, so each test knows exactly how much work a selection cost.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Project
from tests.api.test_metrics import scrape
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

DEMO = f"{GV}/namespaces/demo/trainingruntimes"
OBJECTS = 60
TASKS = ("SFT", "DPO", "GRPO")


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    """alice, with 60 runtimes in demo: tier t0..t19, `gpu` on every 30th, DPO on every 20th
    (the rest SFT), plus 5 in another project that no demo list may touch."""
    rt = lookup("trainingruntimes")
    for i in range(OBJECTS):
        labels = {"tier": f"t{i % 20}", **({"gpu": "yes"} if i % 30 == 0 else {})}
        body = runtime_manifest(f"r{i:02d}", task="DPO" if i % 20 == 0 else "SFT")
        body["metadata"]["labels"] = labels
        store.create(rt, "demo", body)
    Project.objects.create(name="other")
    for i in range(5):
        store.create(rt, "other", runtime_manifest(f"o{i}", task="DPO"))
    return api("alice")


def fetched(index: str) -> float:
    key = (
        "apiserver_cache_list_fetched_objects_total",
        frozenset({"resource_prefix": "trainingruntimes", "index": index}.items()),
    )
    return scrape().get(key, 0.0)


def listed(client: ApiClient, query: str) -> list[str]:
    response = client.get(f"{DEMO}?{query}")
    assert response.status_code == 200, response.content
    return [item["metadata"]["name"] for item in response.json_body["items"]]


TIERS_1_2 = ["r01", "r02", "r21", "r22", "r41", "r42"]


@pytest.mark.parametrize(
    ("query", "index", "expected", "looked_at"),
    [
        # Equality and set-based label requirements: the label index, one value or several.
        ("labelSelector=tier%3Dt3", "label", ["r03", "r23", "r43"], 3),
        ("labelSelector=" + quote("tier in (t1,t2)"), "label", TIERS_1_2, 6),
        # A label present: the label-key index (`gt`/`lt` need it present too).
        ("labelSelector=gpu", "label", ["r00", "r30"], 2),
        ("labelSelector=" + quote("gpu,tier notin (t0)"), "label", ["r30"], 2),
        # A selectable field: its values' index; the name is one too.
        ("fieldSelector=spec.task%3DDPO", "field", ["r00", "r20", "r40"], 3),
        ("fieldSelector=metadata.name%3Dr07", "field", ["r07"], 1),
        # Both: the narrower requirement chooses, the other filters what it named.
        ("labelSelector=gpu&fieldSelector=spec.task%3DDPO", "label", ["r00"], 2),
        ("labelSelector=tier%3Dt0&fieldSelector=spec.task%3DSFT", "label", [], 3),
    ],
)
def test_a_selected_list_looks_only_at_what_an_index_names(
    alice: ApiClient, query: str, index: str, expected: list[str], looked_at: int
) -> None:
    alice.get(DEMO)  # the cache has warmed and caught up
    before = fetched(index)
    assert listed(alice, query) == expected
    # The objects the narrowest requirement names, not the namespace's 60.
    assert fetched(index) - before == looked_at


@pytest.mark.parametrize(
    "query",
    [
        "labelSelector=" + quote("tier notin (t1)"),
        "labelSelector=tier!%3Dt1",
        "labelSelector=!gpu",
        "fieldSelector=spec.task!%3DDPO",
    ],
)
def test_what_no_index_can_answer_scans_the_namespace_only(alice: ApiClient, query: str) -> None:
    alice.get(DEMO)
    before = fetched("")
    names = listed(alice, query)
    assert fetched("") - before == OBJECTS  # the namespace's, never the other project's
    assert 0 < len(names) < OBJECTS


def test_an_index_follows_changes_and_deletes(alice: ApiClient) -> None:
    alice.patch(f"{DEMO}/r05", {"metadata": {"labels": {"tier": "t3"}}})
    alice.delete(f"{DEMO}/r23")
    assert listed(alice, "labelSelector=tier%3Dt3") == ["r03", "r05", "r43"]
    assert listed(alice, "labelSelector=tier%3Dt5") == ["r25", "r45"]
    alice.patch(f"{DEMO}/r43", {"spec": {"task": "DPO"}})
    assert listed(alice, "fieldSelector=spec.task%3DDPO") == ["r00", "r20", "r40", "r43"]
    assert listed(alice, "fieldSelector=metadata.name%3Dr23") == []


def test_an_index_larger_than_the_project_is_passed_over_for_a_scan_of_it(
    alice: ApiClient, api: Callable[[str | None], ApiClient]
) -> None:
    """The indexes span every project: 57 SFT runtimes in demo are no help to a list of the
    5 in `other`, which scans those 5 instead of sorting through demo's."""
    root = api("root")
    root.get(f"{GV}/namespaces/other/trainingruntimes")
    before = fetched(""), fetched("field")
    response = root.get(f"{GV}/namespaces/other/trainingruntimes?fieldSelector=spec.task%3DSFT")
    assert response.status_code == 200, response.content
    assert response.json_body["items"] == []
    assert (fetched("") - before[0], fetched("field") - before[1]) == (5, 0)
    # Where the index is the smaller, it is still used: demo's 3 DPO runtimes of 60.
    assert listed(alice, "fieldSelector=spec.task%3DDPO") == ["r00", "r20", "r40"]
    assert fetched("field") - before[1] == 3
