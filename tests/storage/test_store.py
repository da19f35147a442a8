"""The generic store through its functions: revisions, generation, no-op writes, finalizers."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.apimachinery import errors
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Event
from tests.support.api import runtime_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def rt(actors: dict[str, Any]) -> Any:
    return lookup("trainingruntimes")


def test_it_creates_with_server_metadata_and_one_event(rt: Any) -> None:
    before = store.current_revision()
    created = store.create(rt, "demo", runtime_manifest()).object
    meta = created["metadata"]
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) == before + 1 == store.current_revision()
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert list(Event.objects.filter(revision__gt=before).values_list("type", flat=True)) == [
        "ADDED"
    ]


def test_it_writes_nothing_when_nothing_changes(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest())
    before = store.current_revision()
    result = store.mutate(rt, "demo", "sft-demo", lambda obj: obj)
    assert not result.changed
    assert store.current_revision() == before


def test_it_bumps_generation_on_spec_changes_only(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest())

    def relabel(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"]["tier"] = "gold"
        return obj

    def retask(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["task"] = "DPO"
        return obj

    assert store.mutate(rt, "demo", "sft-demo", relabel).object["metadata"]["generation"] == 1
    assert store.mutate(rt, "demo", "sft-demo", retask).object["metadata"]["generation"] == 2


def test_it_refuses_a_stale_resource_version(rt: Any) -> None:
    created = store.create(rt, "demo", runtime_manifest()).object
    store.mutate(rt, "demo", "sft-demo", lambda o: {**o, "spec": {**o["spec"], "task": "DPO"}})
    with pytest.raises(errors.ApiError) as caught:
        store.update(rt, "demo", "sft-demo", created)
    assert caught.value.reason == "Conflict"
    assert "the object has been modified" in caught.value.message


def test_it_keeps_an_object_with_finalizers_until_the_last_one_goes(rt: Any) -> None:
    store.create(
        rt,
        "demo",
        runtime_manifest(**{})
        | {"metadata": {"name": "sft-demo", "finalizers": ["nodus.dev/cleanup"]}},
    )
    marked = store.delete(rt, "demo", "sft-demo")
    assert not marked.deleted
    assert marked.object["metadata"]["deletionTimestamp"]
    assert marked.object["metadata"]["generation"] == 2

    def release(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["finalizers"] = []
        return obj

    assert store.mutate(rt, "demo", "sft-demo", release).deleted
    with pytest.raises(errors.ApiError):
        store.get(rt, "demo", "sft-demo")
    assert Event.objects.order_by("-revision").first().type == "DELETED"


def test_it_stores_and_emits_nothing_on_dry_run(rt: Any) -> None:
    before = store.current_revision()
    result = store.create(rt, "demo", runtime_manifest(), dry_run=True)
    assert "resourceVersion" not in result.object["metadata"]
    assert store.current_revision() == before
    with pytest.raises(errors.ApiError):
        store.get(rt, "demo", "sft-demo")


def test_it_answers_not_found_for_unknown_projects(rt: Any) -> None:
    with pytest.raises(errors.ApiError) as caught:
        store.create(rt, "nope", runtime_manifest())
    assert caught.value.message == 'namespaces "nope" not found'


def test_it_lists_with_the_revision_of_the_snapshot(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    store.create(rt, "demo", runtime_manifest("b"))
    items, revision = store.list_objects(rt, "demo")
    assert [o["metadata"]["name"] for o in items] == ["a", "b"]
    assert revision == store.current_revision()
