"""Sharded lists over HTTP (KEP-5866): shardSelector filters, shardInfo echoes, pages keep it.

Which shard an object belongs to is worked out here from its uid or namespace with
`fnv1a_64` (itself checked against the FNV reference vectors), never read from the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from runtimes.apimachinery.selectors.shards import FULL_END, fnv1a_64
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Membership, Project, Role
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

DEMO = f"{GV}/namespaces/demo/trainingruntimes"
ALL = f"{GV}/trainingruntimes"
QUARTER = 1 << 62


def shard(index: int, count: int = 4, field: str = "uid") -> str:
    """Shard `index` of `count` equal ranges, as a sharded client writes it."""
    step = (1 << 64) // count
    end = FULL_END if index == count - 1 else f"0x{(index + 1) * step:016x}"
    return f"shardRange(object.metadata.{field}, '0x{index * step:016x}', '{end}')"


def owner(value: str, count: int = 4) -> int:
    return fnv1a_64(value.encode()) // ((1 << 64) // count)


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


@pytest.fixture
def runtimes(actors: dict[str, Any]) -> dict[str, str]:
    """24 runtimes in demo: name -> uid."""
    rt = lookup("trainingruntimes")
    made = {}
    for i in range(24):
        obj = store.create(rt, "demo", runtime_manifest(f"rt-{i:02d}")).object
        made[obj["metadata"]["name"]] = obj["metadata"]["uid"]
    return made


def listed(client: ApiClient, path: str, selector: str, **params: str) -> dict[str, Any]:
    query = "&".join([f"shardSelector={quote(selector)}", *(f"{k}={v}" for k, v in params.items())])
    response = client.get(f"{path}?{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json_body
    return body


def test_uid_shards_split_a_list_exactly_once(alice: ApiClient, runtimes: dict[str, str]) -> None:
    seen: dict[str, int] = {}
    for index in range(4):
        for item in listed(alice, DEMO, shard(index))["items"]:
            name = item["metadata"]["name"]
            assert name not in seen, f"{name} in shards {seen[name]} and {index}"
            seen[name] = index
    assert seen == {name: owner(uid) for name, uid in runtimes.items()}
    assert len(set(seen.values())) > 1  # 24 uuids do not all hash into one quarter


def test_a_list_echoes_its_shard_selector_in_shard_info(
    alice: ApiClient, runtimes: dict[str, str]
) -> None:
    # As the request gave it, spaces and all: a client compares it with what it sent.
    selector = f"  ({shard(0, 2)}) ||   {shard(1, 2)} "
    body = listed(alice, DEMO, selector)
    assert body["metadata"]["shardInfo"] == {"selector": selector}
    assert {i["metadata"]["name"] for i in body["items"]} == set(runtimes)
    plain = alice.get(DEMO).json_body
    assert "shardInfo" not in plain["metadata"]
    # An empty option is no option: no filter, no shardInfo.
    empty = alice.get(f"{DEMO}?shardSelector=").json_body
    assert "shardInfo" not in empty["metadata"]
    assert len(empty["items"]) == len(runtimes)


def test_ors_of_ranges_select_their_union(alice: ApiClient, runtimes: dict[str, str]) -> None:
    selector = f"{shard(0)} || {shard(2)}"
    names = {i["metadata"]["name"] for i in listed(alice, DEMO, selector)["items"]}
    assert names == {n for n, uid in runtimes.items() if owner(uid) in (0, 2)}


def test_namespace_shards_keep_each_project_whole(
    api: Callable[[str | None], ApiClient], actors: dict[str, Any]
) -> None:
    rt = lookup("trainingruntimes")
    projects = ["demo", "alpha", "beta", "gamma", "delta", "omega"]
    for project in projects[1:]:
        made = Project.objects.create(name=project)
        Membership.objects.create(project=made, user=actors["alice"], role=Role.ADMIN)
    for project in projects:
        for i in range(3):
            store.create(rt, project, runtime_manifest(f"ns-{i}"))
    alice = api("alice")
    seen: dict[str, set[int]] = {}
    for index in range(2):
        for item in listed(alice, ALL, shard(index, 2, "namespace"))["items"]:
            seen.setdefault(item["metadata"]["namespace"], set()).add(index)
    assert seen == {p: {owner(p, 2)} for p in projects}
    assert len({owner(p, 2) for p in projects}) == 2  # both halves hold some project


def test_continue_tokens_keep_the_shard(alice: ApiClient, runtimes: dict[str, str]) -> None:
    for index in range(2):
        selector = shard(index, 2)
        pages: list[list[str]] = []
        body = listed(alice, DEMO, selector, limit="3")
        while True:
            meta = body["metadata"]
            assert meta["shardInfo"] == {"selector": selector}
            assert "remainingItemCount" not in meta  # a filtered list's count is unknown
            pages.append([i["metadata"]["name"] for i in body["items"]])
            if not meta.get("continue"):
                break
            body = listed(alice, DEMO, selector, limit="3", **{"continue": meta["continue"]})
        assert len(pages) > 1
        got = [name for page in pages for name in page]
        assert got == sorted(n for n, uid in runtimes.items() if owner(uid, 2) == index)


def test_a_shard_combines_with_label_selectors(actors: dict[str, Any], alice: ApiClient) -> None:
    rt = lookup("trainingruntimes")
    uids = {}
    for i in range(16):
        body = runtime_manifest(f"mix-{i:02d}")
        body["metadata"]["labels"] = {"tier": "gold" if i % 2 else "silver"}
        uids[f"mix-{i:02d}"] = store.create(rt, "demo", body).object["metadata"]["uid"]
    body = listed(alice, DEMO, shard(1, 2), labelSelector="tier%3Dgold")
    names = {i["metadata"]["name"] for i in body["items"]}
    assert names == {n for n, uid in uids.items() if owner(uid, 2) == 1 and int(n[-2:]) % 2}


def test_a_table_list_carries_shard_info(alice: ApiClient, runtimes: dict[str, str]) -> None:
    response = alice.get(
        f"{DEMO}?shardSelector={quote(shard(3))}",
        Accept="application/json;as=Table;v=v1;g=meta.k8s.io",
    )
    assert response.status_code == 200
    table = response.json_body
    assert table["kind"] == "Table"
    assert table["metadata"]["shardInfo"] == {"selector": shard(3)}
    assert len(table["rows"]) == sum(1 for uid in runtimes.values() if owner(uid) == 3)


def test_deletecollection_deletes_only_the_shard(
    alice: ApiClient, runtimes: dict[str, str]
) -> None:
    response = alice.delete(f"{DEMO}?shardSelector={quote(shard(0, 2))}")
    assert response.status_code == 200, response.content
    left = {i["metadata"]["name"] for i in alice.get(DEMO).json_body["items"]}
    assert left == {n for n, uid in runtimes.items() if owner(uid, 2) == 1}


@pytest.mark.parametrize(
    ("selector", "what"),
    [
        (" ", "empty shard selector is not allowed"),
        ("shardRange(object.metadata.uid)", "shardRange() requires exactly 3 arguments, got 1"),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "object.metadata.name"',
        ),
        (
            "shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "metadata.uid"',
        ),
        ("uidRange(object.metadata.uid, '0x0', '0x8')", 'unsupported function "uidRange"'),
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean '
            '"0x0000000000000000"?)',
        ),
        (
            "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
            "hexStart must have '0x' prefix",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x800000000000000G')",
            'hexEnd: invalid hex character "G"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
            "hexEnd: 17-digit hex value must be '0x10000000000000000' (2^64)",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x100000000000000000')",
            "hexEnd: hex value too long (18 chars, max 17)",
        ),
        (
            "shardRange(object.metadata.uid, 0, '0x8000000000000000')",
            "hexStart must be a string literal, got int64",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x4000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x4000000000000000",
        ),
        (
            f"{shard(0)} || {shard(1, field='namespace')}",
            "all shard ranges must use the same field",
        ),
        (f"{shard(0)} && {shard(1)}", 'unsupported function "_&&_"'),
        (shard(0)[:-1], "CEL parse error: Syntax error"),
        ("(" * 100 + shard(0) + ")" * 100, "max recursion depth exceeded"),
    ],
)
def test_a_malformed_selector_is_400_naming_what_is_wrong(
    alice: ApiClient, selector: str, what: str
) -> None:
    # (A watch answers the same: tests/api/test_api_watch_shards.py.)
    response = alice.get(f"{DEMO}?shardSelector={quote(selector)}")
    assert response.status_code == 400, response.content
    status = response.json_body
    assert status["reason"] == "BadRequest"
    assert status["message"].startswith("invalid shardSelector: ")
    assert what in status["message"]
    assert status["details"]["causes"][0]["field"] == "shardSelector"
    assert "shardRange(object.metadata.uid" in status["fix"]


def test_a_selector_over_8_kib_is_400(alice: ApiClient) -> None:
    selector = " || ".join([shard(0)] * 120)
    response = alice.get(f"{DEMO}?shardSelector={quote(selector)}")
    assert response.status_code == 400
    assert "shardSelector: Too long" in response.json_body["message"]
