"""List over HTTP: selectors, consistent pages, continue tokens, resourceVersion rules, Tables."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from runtimes.api import listing
from runtimes.api.listoptions import MAX_SELECTOR_BYTES
from runtimes.registry import seeding
from runtimes.registry.accelerator.strategy import ACCELERATOR_COLUMNS, table_row
from runtimes.registry.kinds import lookup
from runtimes.storage import compaction, store
from runtimes.storage.models import Project
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

DEMO = f"{GV}/namespaces/demo/trainingruntimes"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def rt(actors: dict[str, Any]) -> Any:
    return lookup("trainingruntimes")


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def make(rt: Any, name: str, labels: dict[str, str] | None = None, ns: str = "demo", **spec: Any):
    body = runtime_manifest(name, **spec)
    if labels is not None:
        body["metadata"]["labels"] = labels
    return store.create(rt, ns, body).object


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["metadata"]["name"] for item in response.json_body["items"]]


def relabel(rt: Any, name: str, **labels: str) -> None:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"].update(labels)
        return obj

    store.mutate(rt, "demo", name, change)


def test_it_filters_with_the_full_label_selector_grammar(rt: Any, alice: ApiClient) -> None:
    make(rt, "a", {"app": "trainer", "tier": "gold"})
    make(rt, "b", {"app": "trainer", "tier": "silver", "legacy": "yes"})
    make(rt, "c", {"app": "trainer", "tier": "bronze"})
    make(rt, "d", {"size": "7"})

    def select(selector: str) -> list[str]:
        return names(alice.get(f"{DEMO}?labelSelector={quote(selector)}"))

    assert select("app=trainer,tier in (gold,silver),!legacy") == ["a"]
    assert select("tier!=gold") == ["b", "c", "d"]  # an absent key satisfies !=
    assert select("tier notin (gold,silver)") == ["c", "d"]
    assert select("app") == ["a", "b", "c"]
    assert select("!app") == ["d"]
    assert select("app==trainer") == ["a", "b", "c"]
    assert select("size>5") == ["d"]
    assert select("size<5") == []


def test_it_answers_400_to_a_selector_that_does_not_parse(alice: ApiClient) -> None:
    response = alice.get(f"{DEMO}?labelSelector={quote('a in ()')}")
    assert response.status_code == 400
    assert response.json_body["reason"] == "BadRequest"
    assert response.json_body["kind"] == "Status"


def test_it_bounds_each_selector_at_8_kib_naming_the_parameter(rt: Any, alice: ApiClient) -> None:
    make(rt, "a", {"app": "trainer"})
    assert MAX_SELECTOR_BYTES == 8 * 1024
    # A selector of exactly 8 KiB: 127 values of 63 characters, then padding in the key's value.
    values = [f"v{i:03d}" + "x" * 59 for i in range(127)]
    widest = "app in (trainer," + ",".join(values) + ")"
    widest = widest[:-1] + "," + "y" * (MAX_SELECTOR_BYTES - len(widest) - 1) + ")"
    assert len(widest) == MAX_SELECTOR_BYTES
    assert names(alice.get(f"{DEMO}?labelSelector={quote(widest)}")) == ["a"]
    for parameter, text in (
        ("labelSelector", widest[:-1] + "z)"),
        ("fieldSelector", "metadata.name=" + "a" * MAX_SELECTOR_BYTES),
    ):
        response = alice.get(f"{DEMO}?{parameter}={quote(text)}")
        assert response.status_code == 400
        body = response.json_body
        assert (body["kind"], body["reason"]) == ("Status", "BadRequest")
        assert body["message"] == (
            f"{parameter}: Too long: may not be more than {MAX_SELECTOR_BYTES} bytes"
        )
        assert parameter in body["fix"]


def test_it_filters_with_field_selectors_on_name_and_selectable_fields(
    rt: Any, alice: ApiClient
) -> None:
    make(rt, "a")
    make(rt, "b", task="DPO")
    assert names(alice.get(f"{DEMO}?fieldSelector=metadata.name%3Db")) == ["b"]
    assert names(alice.get(f"{DEMO}?fieldSelector=metadata.name!%3Db")) == ["a"]
    assert names(alice.get(f"{DEMO}?fieldSelector=spec.task%3DDPO")) == ["b"]
    assert names(alice.get(f"{DEMO}?fieldSelector=metadata.namespace%3Ddemo")) == ["a", "b"]
    response = alice.get(f"{DEMO}?fieldSelector=spec.foo%3D1")
    assert response.status_code == 400
    assert response.json_body["message"] == "field label not supported: spec.foo"


def test_it_pages_in_key_order_with_one_resource_version(rt: Any, alice: ApiClient) -> None:
    for name in ["e", "b", "d", "a", "c"]:
        make(rt, name)
    first = alice.get(f"{DEMO}?limit=2").json_body
    revision = first["metadata"]["resourceVersion"]
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 3
    make(rt, "f")  # a write between pages moves the store on, not the list
    second = alice.get(f"{DEMO}?limit=2&continue={first['metadata']['continue']}").json_body
    assert [i["metadata"]["name"] for i in second["items"]] == ["c", "d"]
    assert second["metadata"]["resourceVersion"] == revision
    assert second["metadata"]["remainingItemCount"] == 1
    last = alice.get(f"{DEMO}?limit=2&continue={second['metadata']['continue']}").json_body
    assert [i["metadata"]["name"] for i in last["items"]] == ["e"]
    assert last["metadata"]["resourceVersion"] == revision
    assert "continue" not in last["metadata"]
    assert "remainingItemCount" not in last["metadata"]


def test_it_serves_later_pages_as_of_the_first_page(rt: Any, alice: ApiClient) -> None:
    for name in ["a", "b", "c", "d"]:
        make(rt, name)
    first = alice.get(f"{DEMO}?limit=1").json_body
    before = {o["metadata"]["name"]: o for o in store.list_objects(rt, "demo")[0]}
    store.mutate(rt, "demo", "b", lambda o: {**o, "spec": {**o["spec"], "task": "DPO"}})
    store.delete(rt, "demo", "c")
    make(rt, "bb")  # created after page 1: must not show up
    token = first["metadata"]["continue"]
    rest: list[dict[str, Any]] = []
    while token:
        page = alice.get(f"{DEMO}?limit=1&continue={token}").json_body
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        rest += page["items"]
        token = page["metadata"].get("continue")
    assert [o["metadata"]["name"] for o in rest] == ["b", "c", "d"]
    assert rest[0] == before["b"]  # the old spec and resourceVersion
    assert rest[1] == before["c"]  # deleted since, but alive at the snapshot


def test_it_leaves_out_remaining_item_count_with_selectors(rt: Any, alice: ApiClient) -> None:
    for name in ["a", "b", "c"]:
        make(rt, name)
    page = alice.get(f"{DEMO}?limit=1&labelSelector=app%3Dtrainer").json_body
    assert [i["metadata"]["name"] for i in page["items"]] == ["a"]
    assert page["metadata"]["continue"]
    assert "remainingItemCount" not in page["metadata"]
    page2 = alice.get(
        f"{DEMO}?limit=1&labelSelector=app%3Dtrainer&continue={page['metadata']['continue']}"
    ).json_body
    assert [i["metadata"]["name"] for i in page2["items"]] == ["b"]


def test_it_expires_a_compacted_continue_token_and_offers_a_fresh_one(
    rt: Any, alice: ApiClient
) -> None:
    for name in ["a", "b", "c"]:
        make(rt, name)
    first = alice.get(f"{DEMO}?limit=1").json_body
    make(rt, "d")
    store.delete(rt, "demo", "b")
    compaction.compact(keep=1)
    expired = alice.get(f"{DEMO}?limit=1&continue={first['metadata']['continue']}")
    assert expired.status_code == 410
    assert expired.json_body["reason"] == "Expired"
    assert expired.json_body["message"].startswith("The provided continue parameter is too old")
    fresh = expired.json_body["metadata"]["continue"]
    decoded = orjson.loads(base64.urlsafe_b64decode(fresh + "=" * (-len(fresh) % 4)))
    assert decoded["rv"] == -1
    rest = alice.get(f"{DEMO}?continue={fresh}")
    # Inconsistent continuation: the remainder at the current revision (b is gone, d is new).
    assert names(rest) == ["c", "d"]
    assert rest.json_body["metadata"]["resourceVersion"] == str(store.current_revision())


@pytest.mark.parametrize("token", ["garbage!", "bm90IGpzb24", base64.b64encode(b"{}").decode()])
def test_it_rejects_a_malformed_continue_token(alice: ApiClient, token: str) -> None:
    response = alice.get(f"{DEMO}?limit=1&continue={quote(token)}")
    assert response.status_code == 400
    assert response.json_body["message"].startswith("invalid continue token")


def test_it_rejects_a_resource_version_with_continue(rt: Any, alice: ApiClient) -> None:
    make(rt, "a")
    make(rt, "b")
    token = alice.get(f"{DEMO}?limit=1").json_body["metadata"]["continue"]
    response = alice.get(f"{DEMO}?limit=1&continue={token}&resourceVersion=1")
    assert response.status_code == 400
    assert "not allowed when using continue" in response.json_body["message"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "resourceVersionMatch=Exact",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
            "resourceVersion is provided",
        ),
        ("sendInitialEvents=true", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden"),
        ("resourceVersion=0&resourceVersionMatch=Exact", 'forbidden for resourceVersion "0"'),
        ("resourceVersion=1&resourceVersionMatch=Newest", 'Unsupported value: "Newest"'),
    ],
)
def test_it_answers_422_to_forbidden_list_options(
    alice: ApiClient, query: str, message: str
) -> None:
    response = alice.get(f"{DEMO}?{query}")
    assert response.status_code == 422
    body = response.json_body
    assert body["reason"] == "Invalid"
    assert body["message"].startswith('ListOptions.meta.k8s.io "" is invalid: ')
    assert message in body["message"]


@pytest.mark.parametrize("query", ["resourceVersion=abc", "resourceVersion=-4", "limit=ten"])
def test_it_answers_400_to_unparsable_values(alice: ApiClient, query: str) -> None:
    assert alice.get(f"{DEMO}?{query}").status_code == 400


def test_it_times_out_on_a_resource_version_from_the_future(
    rt: Any, alice: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "WAIT_FOR_REVISION_SECONDS", 0.2)
    ahead = store.current_revision() + 100
    response = alice.get(f"{DEMO}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan")
    assert response.status_code == 504
    body = response.json_body
    assert body["reason"] == "Timeout"
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert (
        body["message"] == f"Timeout: Too large resource version: {ahead}, current: {ahead - 100}"
    )
    assert response["Retry-After"] == "1"


def test_it_lists_exactly_at_an_older_revision(rt: Any, alice: ApiClient) -> None:
    make(rt, "a")
    at = store.current_revision()
    make(rt, "b")
    store.mutate(rt, "demo", "a", lambda o: {**o, "spec": {**o["spec"], "task": "DPO"}})
    exact = alice.get(f"{DEMO}?resourceVersion={at}&resourceVersionMatch=Exact").json_body
    assert [i["metadata"]["name"] for i in exact["items"]] == ["a"]
    assert exact["items"][0]["spec"]["task"] == "SFT"
    assert exact["metadata"]["resourceVersion"] == str(at)
    newer = alice.get(f"{DEMO}?resourceVersion={at}&resourceVersionMatch=NotOlderThan").json_body
    assert [i["metadata"]["name"] for i in newer["items"]] == ["a", "b"]
    assert int(newer["metadata"]["resourceVersion"]) > at
    # The legacy rule: a resourceVersion plus a limit means Exact.
    legacy = alice.get(f"{DEMO}?resourceVersion={at}&limit=10").json_body
    assert legacy["metadata"]["resourceVersion"] == str(at)


def test_it_expires_an_exact_list_below_the_compaction_floor(rt: Any, alice: ApiClient) -> None:
    make(rt, "a")
    old = store.current_revision()
    for name in ["b", "c", "d"]:
        make(rt, name)
    compaction.compact(keep=2)
    response = alice.get(f"{DEMO}?resourceVersion={old}&resourceVersionMatch=Exact")
    assert response.status_code == 410
    assert response.json_body["message"] == "The resourceVersion for the provided list is too old."


def test_it_renders_tables_with_include_object_choices(rt: Any, alice: ApiClient) -> None:
    make(rt, "a")
    metadata = alice.get(DEMO, Accept=TABLE).json_body
    assert metadata["kind"] == "Table"
    assert metadata["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert [c["priority"] for c in metadata["columnDefinitions"]].count(1) >= 1
    whole = alice.get(f"{DEMO}?includeObject=Object", Accept=TABLE).json_body
    assert whole["rows"][0]["object"]["kind"] == "TrainingRuntime"
    bare = alice.get(f"{DEMO}?includeObject=None", Accept=TABLE).json_body
    assert bare["rows"][0]["object"] is None  # kube writes the key: "object": null
    bad = alice.get(f"{DEMO}?includeObject=Everything", Accept=TABLE)
    assert bad.status_code == 400
    paged = alice.get(f"{DEMO}?limit=1", Accept=TABLE).json_body
    assert paged["metadata"]["resourceVersion"]


def test_it_prints_the_accelerator_columns_the_catalog_defines(alice: ApiClient) -> None:
    seeding.seed_accelerators()
    table = alice.get(f"{GV}/accelerators?includeObject=Object", Accept=TABLE).json_body
    defined = table["columnDefinitions"][1:-1]  # between Name and Age
    assert defined == ACCELERATOR_COLUMNS
    assert [(c["name"], c["priority"]) for c in defined] == [
        ("Family", 0), ("Memory", 0), ("Class", 0), ("NVLink", 0), ("Offerings", 1),
    ]  # fmt: skip
    for row in table["rows"]:
        assert row["cells"][1:-1] == table_row(row["object"])


def test_it_shows_only_readable_projects_in_a_cluster_wide_list(
    rt: Any, actors: dict[str, Any], api: Callable[[str | None], ApiClient]
) -> None:
    Project.objects.get_or_create(name="nodus")
    Project.objects.create(name="secret")
    make(rt, "in-demo")
    make(rt, "in-secret", ns="secret")
    make(rt, "in-nodus", ns="nodus")
    everywhere = f"{GV}/trainingruntimes"
    assert names(api("bob").get(everywhere)) == ["in-demo", "in-nodus"]
    assert names(api("charlie").get(everywhere)) == ["in-nodus"]
    assert names(api("root").get(everywhere)) == ["in-demo", "in-nodus", "in-secret"]
    # remainingItemCount counts only what the reader may see.
    page = api("charlie").get(f"{everywhere}?limit=1").json_body
    assert "continue" not in page["metadata"]


def test_it_deletes_a_collection_by_label_selector(rt: Any, alice: ApiClient) -> None:
    make(rt, "keep", {"tier": "gold"})
    make(rt, "drop", {"tier": "silver"})
    response = alice.delete(f"{DEMO}?labelSelector=tier%3Dsilver")
    assert response.status_code == 200
    assert names(alice.get(DEMO)) == ["keep"]


@pytest.mark.parametrize("revision", ["\u00b9", "\u0661", "12\u00b3", "1e3", " 1"])
def test_a_resource_version_that_is_not_ascii_digits_is_a_400(
    rt: Any, alice: ApiClient, revision: str
) -> None:
    make(rt, "a")
    for path in (DEMO, f"{DEMO}/a"):
        response = alice.get(f"{path}?resourceVersion={quote(revision)}")
        assert response.status_code == 400, (path, response.content)
        assert "invalid resource version" in response.json_body["message"]
