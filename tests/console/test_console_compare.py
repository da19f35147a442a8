"""Compare two runtimes or two revisions side by side; a runtime's revision history."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest

from runtimes.console.compare import MAX_REF_CHARS, CompareError, field_changes, flatten, parse_ref
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import ApiClient, runtime_manifest
from tests.support.console import client_for, put_runtime

DEMO = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


def rows_of(page: str, section: str) -> dict[str, tuple[str, str, bool]]:
    """{field: (first, second, marked as differing)} of one section's table."""
    start = page.index(f"<h2>{section}")
    table = page[start : page.index("</section>", start)]
    found = {}
    for match in re.finditer(
        r'<tr( class="differs")?><th scope="row" class="mono">(.*?)</th>'
        r'<td class="mono">(.*?)</td><td class="mono">(.*?)</td></tr>',
        table,
        re.S,
    ):
        label = html.unescape(re.sub(r"<[^>]+>", "", match[2]).replace("differs: ", ""))
        label = label.replace("≠", "")
        found[label] = (html.unescape(match[3]), html.unescape(match[4]), bool(match[1]))
    return found


@pytest.mark.django_db
def test_it_lays_two_runtimes_side_by_side_and_marks_what_differs(
    catalog_data: dict[str, Any],
) -> None:
    put_runtime(
        "demo",
        runtime_manifest(
            "sft-other",
            launcher="Torchrun",
            defaults={"resources": {"gpu": {"type": ["H100"], "count": 2}}},
            estimate={"secondsPerStep": {"h100-80g": 0.25}},
        ),
    )
    client = client_for(catalog_data["alice"])
    response = client.get("/compare", {"a": "demo/sft-demo", "b": "demo/sft-other"})
    assert response.status_code == 200
    page = response.content.decode()

    contract = rows_of(page, "Contract")
    assert contract["launcher"][2] is True
    assert contract["launcher"][1] == "Torchrun"
    assert contract["task"] == ("SFT", "SFT", False)
    defaults = rows_of(page, "Defaults")
    assert defaults["resources.gpu.count"] == ("1", "2", True)
    estimates = rows_of(page, "Estimates for 1,000 steps")
    first, second, differs = estimates["h100-80g"]
    assert differs
    assert "$" in first
    assert "for the run" in second
    presets = rows_of(page, "Presets")
    assert presets["Qwen/Qwen3-0.6B · LoRA"][1] == "—"  # only the first has that preset

    only = client.get(
        "/compare", {"a": "demo/sft-demo", "b": "demo/sft-other", "only": "diff"}
    ).content.decode()
    assert "task" not in rows_of(only, "Contract")
    assert "launcher" in rows_of(only, "Contract")


@pytest.mark.django_db
def test_it_compares_a_revision_from_the_event_log_with_the_runtime_now(
    catalog_data: dict[str, Any],
) -> None:
    before = store.get(TRAINING_RUNTIMES, "demo", "sft-demo")
    revision = before["metadata"]["resourceVersion"]

    def relaunch(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["launcher"] = "Torchrun"
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", "sft-demo", relaunch)
    page = (
        client_for(catalog_data["bob"])
        .get("/compare", {"a": f"demo/sft-demo@{revision}", "b": "demo/sft-demo"})
        .content.decode()
    )
    assert f"demo/sft-demo at revision {revision}" in page
    launcher = rows_of(page, "Contract")["launcher"]
    assert launcher == (before["spec"]["launcher"], "Torchrun", True)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        ("secret/hidden-runtime", "demo/sft-demo", "no runtime secret/hidden-runtime that you"),
        ("demo/nope", "demo/sft-demo", "no runtime demo/nope that you may read"),
        ("demo/sft-demo@999999999", "demo/sft-demo", "is not in the event log"),
        ("demo/sft-demo@12ab", "demo/sft-demo", "is not a revision number"),
        ("Demo!/x", "demo/sft-demo", "does not name a runtime"),
        ("demo/" + "a" * 400, "demo/sft-demo", "too long"),
    ],
)
def test_a_side_that_cannot_be_shown_is_a_field_error_that_leaks_nothing(
    catalog_data: dict[str, Any], a: str, b: str, said: str
) -> None:
    response = client_for(catalog_data["alice"]).get("/compare", {"a": a, "b": b})
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert said in page
    assert 'id="compare-a" name="a"' in page
    assert 'aria-invalid="true"' in page
    assert "<h2>Contract" not in page


@pytest.mark.django_db
def test_the_chooser_offers_only_runtimes_the_caller_may_read(
    catalog_data: dict[str, Any],
) -> None:
    page = client_for(catalog_data["bob"]).get("/compare", {"a": "demo/sft-demo"}).content.decode()
    assert '<option value="demo/eval-demo">' in page
    assert "secret/hidden-runtime" not in page


@pytest.mark.django_db
@pytest.mark.parametrize("query", [{}, {"a": ""}, {"b": "demo/sft-demo"}, {"a": "", "b": ""}])
def test_nothing_chosen_yet_is_an_empty_state_with_two_pickers_not_an_error(
    catalog_data: dict[str, Any], query: dict[str, str]
) -> None:
    response = client_for(catalog_data["bob"]).get("/compare", query)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert 'id="compare-empty"' in page
    assert 'id="compare-a" name="a"' in page
    assert 'id="compare-b" name="b"' in page
    assert 'aria-invalid="true"' not in page
    assert "<h2>Contract" not in page


def test_anonymous_callers_are_sent_to_sign_in(client: Any, db: Any) -> None:
    response = client.get("/compare", {"a": "demo/sft-demo", "b": "demo/sft-demo"})
    assert response.status_code == 302
    assert "/login" in response["Location"]


@pytest.mark.django_db
def test_history_lists_each_write_with_who_and_what_newest_first(
    actors: dict[str, Any], api: Callable[[str | None], ApiClient]
) -> None:
    alice = api("alice")
    created = alice.post(f"{DEMO}?fieldManager=alice-script", runtime_manifest("hist"))
    assert created.status_code == 201, created.content
    changed = alice.patch(
        f"{DEMO}/hist?fieldManager=tuner",
        {"spec": {"launcher": "Torchrun"}, "metadata": {"labels": {"team": "bars"}}},
    )
    assert changed.status_code == 200, changed.content
    page = client_for(actors["bob"]).get("/p/demo/runtimes/hist/history").content.decode()
    entries = page.split('<li class="history-entry">')[1:]
    assert len(entries) == 2
    newest, oldest = entries
    assert "changed" in newest
    assert "created" in oldest
    assert 'by <span class="mono">alice</span> · via <span class="mono">tuner</span>' in newest
    assert (
        'by <span class="mono">alice</span> · via <span class="mono">alice-script</span>' in oldest
    )
    assert '<th scope="row" class="mono">spec.launcher</th>' in newest
    assert '<td class="mono">Torchrun</td>' in newest
    assert '<th scope="row" class="mono">metadata.labels.team</th>' in newest
    assert "metadata.resourceVersion" not in newest  # bookkeeping is left out
    revision = changed.json()["metadata"]["resourceVersion"]
    assert f"revision {revision}" in newest
    assert 'aria-current="page"' in page
    assert ">History</a>" in page


@pytest.mark.django_db
def test_history_pages_through_older_revisions(
    actors: dict[str, Any], api: Callable[[str | None], ApiClient]
) -> None:
    from runtimes.console import compare

    alice = api("alice")
    assert alice.post(DEMO, runtime_manifest("busy")).status_code == 201
    for step in range(compare.HISTORY_PAGE + 3):
        patched = alice.patch(f"{DEMO}/busy", {"metadata": {"labels": {"step": str(step)}}})
        assert patched.status_code == 200
    bob = client_for(actors["bob"])
    first = bob.get("/p/demo/runtimes/busy/history").content.decode()
    assert first.count('<li class="history-entry">') == compare.HISTORY_PAGE
    older = re.search(r'href="\?before=(\d+)"', first)
    assert older
    rest = bob.get(f"/p/demo/runtimes/busy/history?before={older[1]}").content.decode()
    assert rest.count('<li class="history-entry">') == 4  # 3 more changes and the create
    assert "?before=" not in rest
    hostile = bob.get("/p/demo/runtimes/busy/history?before=" + "9" * 500)
    assert hostile.status_code == 200  # an unusable cursor is the first page


@pytest.mark.django_db
def test_history_is_hidden_from_outsiders(catalog_data: dict[str, Any]) -> None:
    response = client_for(catalog_data["charlie"]).get("/p/demo/runtimes/sft-demo/history")
    assert response.status_code == 404


def test_references_are_checked_before_any_lookup() -> None:
    assert parse_ref("nodus/sft-qwen3") == ("nodus", "sft-qwen3", None)
    assert parse_ref(" demo/x@42 ") == ("demo", "x", 42)
    for bad in ("nodus", "/x", "a/", "a/B", "a/x@", "a/x@-1", "a/x@1e3", "a" * MAX_REF_CHARS):
        with pytest.raises(CompareError):
            parse_ref(bad + ("/x" if bad == "a" * MAX_REF_CHARS else ""))


def test_flatten_keeps_scalar_lists_whole_and_indexes_lists_of_objects() -> None:
    flat = flatten({"a": {"b": 1, "c": [1, 2]}, "d": [{"e": "x"}, {"e": "y"}], "f": {}})
    assert flat == {"a.b": 1, "a.c": [1, 2], "d[0].e": "x", "d[1].e": "y", "f": {}}


def test_flatten_stops_at_its_depth_and_row_bounds_without_recursion() -> None:
    from runtimes.console import compare

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(50_000):  # far deeper than Python's recursion limit
        node["n"] = {}
        node = node["n"]
    flat = flatten(deep)
    assert len(flat) == 1
    (path,) = flat
    assert path.count(".") == compare.MAX_DEPTH - 1
    wide = {f"k{i}": i for i in range(compare.MAX_ROWS * 3)}
    assert len(flatten(wide)) == compare.MAX_ROWS


def test_field_changes_leave_bookkeeping_out_and_mark_absent_sides() -> None:
    before = {"metadata": {"resourceVersion": "1", "labels": {"a": "1"}}, "spec": {"x": 1}}
    after = {"metadata": {"resourceVersion": "2", "labels": {"b": "2"}}, "spec": {"x": 1}}
    assert field_changes(before, after) == [
        ("metadata.labels.a", "1", ""),
        ("metadata.labels.b", "", "2"),
    ]


@pytest.mark.django_db
def test_history_names_an_oidc_user_who_wrote_through_a_group_binding(
    actors: dict[str, Any], provider: Any
) -> None:
    from runtimes.storage.models import Membership, Role

    Membership.objects.create(project=actors["demo"], group="oidc:ml-team", role=Role.EDITOR)
    dana = ApiClient(provider.id_token("dana", ["ml-team"]))
    assert dana.post(DEMO, runtime_manifest("by-dana")).status_code == 201
    page = client_for(actors["bob"]).get("/p/demo/runtimes/by-dana/history").content.decode()
    assert 'by <span class="mono">oidc:dana</span>' in page
