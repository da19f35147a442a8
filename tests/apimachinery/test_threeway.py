"""Three-way merge and field diff: only what one side changed moves, conflicts are named."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from runtimes.apimachinery.fieldsets import ListTypes
from runtimes.apimachinery.threeway import ABSENT, Change, Conflict, diff, merge, same

# The shapes the TrainingRuntime schema declares: an atomic argv, a map-list keyed by name, a
# set, and an atomic map.
TYPES = ListTypes(
    lists={
        "spec.command": ("atomic", ()),
        "spec.outputs": ("map", ("name",)),
        "spec.modes": ("set", ()),
    },
    atomic_maps=frozenset({"spec.selector"}),
    free_maps=frozenset({"metadata.labels"}),
)

BASE_TEXT = """\
apiVersion: nodus.dev/v1beta1
kind: TrainingRuntime
metadata:
  name: contested
  labels:
    team: bars
    tier: gold
spec:
  image: registry.example.com/sft:1.0
  launcher: Plain
  command: [python, -m, trainer]
  modes: [Train, Evaluate]
  outputs:
  - name: model
    path: /out/model
  - name: logs
    path: /out/logs
  defaults:
    resources:
      gpu: {count: 1}
      cpu: 4
"""


def base() -> dict[str, Any]:
    return yaml.safe_load(BASE_TEXT)


def edited(change: Any) -> dict[str, Any]:
    obj = copy.deepcopy(base())
    change(obj)
    return obj


def test_it_changes_nothing_for_a_comment_only_edit() -> None:
    mine = yaml.safe_load("# just a comment\n" + BASE_TEXT.replace("bars", "bars  # ours"))
    theirs = edited(lambda o: o["metadata"]["labels"].update(team="changed-meanwhile"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.merged == theirs
    assert result.conflicts == []
    assert result.clean


def test_it_applies_disjoint_edits_of_both_sides() -> None:
    mine = edited(lambda o: o["spec"].update(launcher="Torchrun"))
    theirs = edited(lambda o: o["metadata"]["labels"].update(team="changed-meanwhile"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.clean
    assert result.merged["spec"]["launcher"] == "Torchrun"
    assert result.merged["metadata"]["labels"]["team"] == "changed-meanwhile"


def test_it_reports_a_same_field_conflict_with_all_three_values() -> None:
    mine = edited(lambda o: o["metadata"]["labels"].update(team="mine"))
    theirs = edited(lambda o: o["metadata"]["labels"].update(team="changed-meanwhile"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.conflicts == [
        Conflict("metadata.labels.team", "bars", "mine", "changed-meanwhile")
    ]
    assert result.unresolved == ["metadata.labels.team"]
    # Until the user picks, nothing of theirs is given up.
    assert result.merged == theirs


def test_it_settles_a_conflict_by_the_pick_for_that_field() -> None:
    mine = edited(lambda o: o["metadata"]["labels"].update(team="mine"))
    theirs = edited(lambda o: o["metadata"]["labels"].update(team="changed-meanwhile"))
    for pick, expected in (("mine", "mine"), ("theirs", "changed-meanwhile"), ("base", "bars")):
        result = merge(base(), mine, theirs, TYPES, {"metadata.labels.team": pick})
        assert result.clean
        assert result.merged["metadata"]["labels"]["team"] == expected
    # A pick that names no side settles nothing.
    assert not merge(base(), mine, theirs, TYPES, {"metadata.labels.team": "both"}).clean


def test_it_takes_one_change_made_on_both_sides_without_a_conflict() -> None:
    mine = edited(lambda o: o["spec"].update(launcher="Torchrun"))
    theirs = edited(lambda o: o["spec"].update(launcher="Torchrun"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.clean
    assert result.merged == mine


def test_it_keeps_a_deletion_made_on_either_side() -> None:
    mine = edited(lambda o: o["metadata"]["labels"].pop("tier"))
    theirs = edited(lambda o: o["spec"]["defaults"]["resources"].pop("cpu"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.clean
    assert result.merged["metadata"]["labels"] == {"team": "bars"}
    assert result.merged["spec"]["defaults"]["resources"] == {"gpu": {"count": 1}}


def test_it_reports_a_deletion_against_a_change_as_a_conflict() -> None:
    mine = edited(lambda o: o["metadata"]["labels"].pop("tier"))
    theirs = edited(lambda o: o["metadata"]["labels"].update(tier="silver"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.conflicts == [Conflict("metadata.labels.tier", "gold", ABSENT, "silver")]
    settled = merge(base(), mine, theirs, TYPES, {"metadata.labels.tier": "mine"})
    assert "tier" not in settled.merged["metadata"]["labels"]


def test_it_merges_nested_maps_key_by_key() -> None:
    mine = edited(lambda o: o["spec"]["defaults"]["resources"]["gpu"].update(count=2))
    theirs = edited(lambda o: o["spec"]["defaults"]["resources"].update(cpu=8, memory="32Gi"))
    result = merge(base(), mine, theirs, TYPES)
    assert result.clean
    assert result.merged["spec"]["defaults"]["resources"] == {
        "gpu": {"count": 2},
        "cpu": 8,
        "memory": "32Gi",
    }


def test_it_merges_a_map_both_sides_added() -> None:
    mine = edited(lambda o: o["spec"].update(estimate={"a": 1, "b": 2}))
    theirs = edited(lambda o: o["spec"].update(estimate={"b": 3, "c": 4}))
    result = merge(base(), mine, theirs, TYPES)
    assert result.conflicts == [Conflict("spec.estimate.b", ABSENT, 2, 3)]
    assert result.merged["spec"]["estimate"] == {"b": 3, "c": 4, "a": 1}


def test_it_merges_an_atomic_list_as_one_value() -> None:
    mine = edited(lambda o: o["spec"].update(command=["python", "-m", "mine"]))
    theirs = edited(lambda o: o["spec"].update(command=["python", "-u", "-m", "trainer"]))
    result = merge(base(), mine, theirs, TYPES)
    [conflict] = result.conflicts
    assert (conflict.path, conflict.mine) == ("spec.command", ["python", "-m", "mine"])
    only_mine = merge(base(), mine, base(), TYPES)
    assert only_mine.clean
    assert only_mine.merged["spec"]["command"] == ["python", "-m", "mine"]


def test_it_merges_a_map_list_item_by_item_by_its_keys() -> None:
    def mine_change(o: dict[str, Any]) -> None:
        o["spec"]["outputs"][0]["path"] = "/mine/model"
        o["spec"]["outputs"].append({"name": "metrics", "path": "/out/metrics"})

    def their_change(o: dict[str, Any]) -> None:
        o["spec"]["outputs"].reverse()  # order alone is not a change of an item
        o["spec"]["outputs"][0]["format"] = "text"  # logs, now first

    result = merge(base(), edited(mine_change), edited(their_change), TYPES)
    assert result.clean
    assert result.merged["spec"]["outputs"] == [
        {"name": "logs", "path": "/out/logs", "format": "text"},
        {"name": "model", "path": "/mine/model"},
        {"name": "metrics", "path": "/out/metrics"},
    ]


def test_it_names_a_map_list_items_conflict_by_its_keys() -> None:
    mine = edited(lambda o: o["spec"]["outputs"][0].update(path="/mine"))
    theirs = edited(lambda o: o["spec"]["outputs"][0].update(path="/theirs"))
    [conflict] = merge(base(), mine, theirs, TYPES).conflicts
    assert conflict == Conflict('spec.outputs[name="model"].path', "/out/model", "/mine", "/theirs")


def test_it_reports_a_removed_item_that_the_other_side_changed() -> None:
    mine = edited(lambda o: o["spec"]["outputs"].pop(1))
    theirs = edited(lambda o: o["spec"]["outputs"][1].update(path="/elsewhere"))
    result = merge(base(), mine, theirs, TYPES)
    assert [c.path for c in result.conflicts] == ['spec.outputs[name="logs"]']
    assert result.conflicts[0].mine is ABSENT
    removed = merge(base(), mine, theirs, TYPES, {'spec.outputs[name="logs"]': "mine"})
    assert [o["name"] for o in removed.merged["spec"]["outputs"]] == ["model"]


def test_it_merges_a_set_by_membership() -> None:
    mine = edited(lambda o: o["spec"].update(modes=["Train", "Evaluate", "Serve"]))
    theirs = edited(lambda o: o["spec"].update(modes=["Train"]))
    result = merge(base(), mine, theirs, TYPES)
    assert result.clean
    assert result.merged["spec"]["modes"] == ["Train", "Serve"]


def test_it_merges_an_unkeyable_map_list_whole() -> None:
    # Two items with one key cannot be told apart: the list is one value, as for apply.
    twice = [{"name": "model", "path": "/a"}, {"name": "model", "path": "/b"}]
    mine = edited(lambda o: o["spec"].update(outputs=twice))
    theirs = edited(lambda o: o["spec"]["outputs"][1].update(path="/x"))
    [conflict] = merge(base(), mine, theirs, TYPES).conflicts
    assert conflict.path == "spec.outputs"
    assert conflict.mine == twice


def test_it_merges_an_atomic_map_whole() -> None:
    start = edited(lambda o: o["spec"].update(selector={"a": "1", "b": "2"}))
    mine = copy.deepcopy(start)
    mine["spec"]["selector"]["a"] = "mine"
    theirs = copy.deepcopy(start)
    theirs["spec"]["selector"]["b"] = "theirs"
    [conflict] = merge(start, mine, theirs, TYPES).conflicts
    assert conflict.path == "spec.selector"


def test_it_quotes_keys_that_are_not_plain_names() -> None:
    mine = edited(lambda o: o["metadata"]["labels"].update({"app.kubernetes.io/name": "x"}))
    theirs = edited(lambda o: o["metadata"]["labels"].update({"app.kubernetes.io/name": "y"}))
    [conflict] = merge(base(), mine, theirs, TYPES).conflicts
    assert conflict.path == 'metadata.labels["app.kubernetes.io/name"]'


def test_it_diffs_field_by_field() -> None:
    def change(o: dict[str, Any]) -> None:
        o["metadata"]["labels"]["team"] = "changed-meanwhile"
        del o["metadata"]["labels"]["tier"]
        o["spec"]["launcher"] = "Torchrun"
        o["spec"]["outputs"][1]["path"] = "/logs"
        o["spec"]["modes"] = ["Train", "Serve"]
        o["spec"]["defaults"]["resources"]["memory"] = "8Gi"

    assert diff(base(), edited(change), TYPES) == [
        Change("metadata.labels.team", "bars", "changed-meanwhile"),
        Change("metadata.labels.tier", "gold", ABSENT),
        Change("spec.launcher", "Plain", "Torchrun"),
        Change('spec.modes["Evaluate"]', "Evaluate", ABSENT),
        Change('spec.modes["Serve"]', ABSENT, "Serve"),
        Change('spec.outputs[name="logs"].path', "/out/logs", "/logs"),
        Change("spec.defaults.resources.memory", ABSENT, "8Gi"),
    ]


def test_it_diffs_nothing_for_equal_objects_and_a_reorder_as_a_whole() -> None:
    assert diff(base(), yaml.safe_load("# note\n" + BASE_TEXT), TYPES) == []
    reordered = edited(lambda o: o["spec"]["outputs"].reverse())
    [change] = diff(base(), reordered, TYPES)
    assert change.path == "spec.outputs"


def test_it_compares_values_as_json_does() -> None:
    assert not same(True, 1)
    assert same(1, 1.0)
    assert same({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert not same(None, ABSENT)
    assert [c.path for c in diff({"a": True}, {"a": 1}, TYPES)] == ["a"]
