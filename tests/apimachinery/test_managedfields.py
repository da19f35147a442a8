"""Server-side apply subset and managedFields bookkeeping."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from runtimes.apimachinery.fieldsets import (
    ListTypes,
    applied_fields,
    decode_fields_v1,
    encode_fields_v1,
    merge_objects,
    object_fields,
    path_string,
)
from runtimes.apimachinery.managedfields import (
    KUBECTL,
    LAST_APPLIED,
    ApplyConflict,
    Conflict,
    applied_config,
    apply,
    conflict_message,
    go_json,
    incoming_entries,
    record_update,
    validation_errors,
)
from runtimes.apimachinery.schema_nodes import merge_types

V1 = "nodus.dev/v1beta1"
V2 = "nodus.dev/v1"
T0, T1, T2, T3 = (f"2026-12-02T1{n}:00:00Z" for n in range(4))
LIST_MAP_KEYS = {
    "spec.presets": ["model", "method", "quantization"],
    "spec.defaults.sidecars": ["name"],
    "spec.outputs": ["name"],
}
TYPES = ListTypes(LIST_MAP_KEYS)


def manifest(**spec: Any) -> dict[str, Any]:
    body = {"task": "SFT", "image": "registry.local/sft:1", "args": ["--epochs", "3"]}
    body.update(spec)
    return {
        "apiVersion": V1,
        "kind": "TrainingRuntime",
        "metadata": {"name": "sft", "namespace": "demo", "labels": {"app": "trainer"}},
        "spec": body,
    }


def stored(obj: dict[str, Any], managed: list[dict[str, Any]]) -> dict[str, Any]:
    """What the store would persist: server metadata plus the managed fields."""
    out = copy.deepcopy(obj)
    out["metadata"].update(uid="u-1", resourceVersion="7", generation=1, managedFields=managed)
    return out


def by_manager(managed: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in managed}


def update(managed: Any, manager: str, old: Any, new: Any, time: str) -> list[dict[str, Any]]:
    return record_update(
        managed, manager, "Update", V1, old, new, "", time, list_map_keys=LIST_MAP_KEYS
    )


def do_apply(live: Any, config: Any, manager: str = "kubectl", force: bool = False, **kw: Any):
    managed = (live or {}).get("metadata", {}).get("managedFields", [])
    return apply(
        live,
        config,
        manager,
        force,
        managed,
        kw.pop("api_version", V1),
        kw.pop("time", T1),
        list_map_keys=LIST_MAP_KEYS,
        **kw,
    )


# FieldsV1 encoding ---------------------------------------------------------------------------


def test_it_encodes_leaves_items_and_sets_as_fields_v1() -> None:
    obj = {
        "metadata": {
            "name": "ignored",
            "uid": "ignored",
            "labels": {"app": "x"},
            "finalizers": ["nodus.dev/cleanup"],
        },
        "spec": {
            "task": "SFT",
            "empty": {},
            "args": ["a"],
            "presets": [{"model": "llama", "method": "LoRA", "resources": {"gpu": 2}}],
        },
    }
    assert encode_fields_v1(applied_fields(obj, TYPES)) == {
        "f:metadata": {
            "f:finalizers": {'v:"nodus.dev/cleanup"': {}},
            "f:labels": {"f:app": {}},
        },
        "f:spec": {
            "f:args": {},
            "f:empty": {},
            "f:presets": {
                'k:{"method":"LoRA","model":"llama"}': {
                    ".": {},
                    "f:method": {},
                    "f:model": {},
                    "f:resources": {"f:gpu": {}},
                }
            },
            "f:task": {},
        },
    }


def test_it_marks_maps_as_members_for_ordinary_writes_only() -> None:
    obj = {"metadata": {"labels": {"a": "1"}}, "spec": {"task": "SFT"}}
    every_member = encode_fields_v1(object_fields(obj, TYPES))
    assert every_member == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {".": {}, "f:task": {}},
    }
    assert decode_fields_v1(every_member) == set(object_fields(obj, TYPES))


def test_it_round_trips_fields_v1() -> None:
    paths = {
        ("f:spec", "f:task"),
        ("f:spec", "f:presets", 'k:{"model":"m"}'),
        ("f:spec", "f:presets", 'k:{"model":"m"}', "f:model"),
        ("f:metadata", "f:finalizers", 'v:"a"'),
    }
    assert decode_fields_v1(encode_fields_v1(paths)) == paths
    assert decode_fields_v1({}) == set()
    assert decode_fields_v1(None) == set()


def test_it_treats_unkeyable_lists_as_atomic() -> None:
    # Duplicate keys, or items missing every key field, make the list atomic.
    duplicated = {"spec": {"outputs": [{"name": "a"}, {"name": "a"}]}}
    assert applied_fields(duplicated, TYPES) == {("f:spec", "f:outputs")}
    keyless = {"spec": {"outputs": [{"path": "/x"}]}}
    assert applied_fields(keyless, TYPES) == {("f:spec", "f:outputs")}
    not_scalars = {"metadata": {"finalizers": [["a"]]}}
    assert applied_fields(not_scalars, TYPES) == {("f:metadata", "f:finalizers")}


def test_it_prints_paths_like_kube() -> None:
    assert path_string(("f:spec", "f:image")) == ".spec.image"
    assert (
        path_string(("f:spec", "f:presets", 'k:{"model":"m","method":"LoRA"}', "f:gpu"))
        == '.spec.presets[method="LoRA",model="m"].gpu'
    )
    assert path_string(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'
    assert path_string(("f:spec", "f:ports", 'k:{"port":80}')) == ".spec.ports[port=80]"


# Updates -------------------------------------------------------------------------------------


def test_it_gives_the_creator_every_field_it_set() -> None:
    created = manifest()
    managed = record_update([], "kubectl-create", "Update", V1, None, created, "", T0)
    assert managed == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": V1,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {".": {}, "f:args": {}, "f:image": {}, "f:task": {}},
            },
        }
    ]


def test_it_moves_changed_fields_to_the_updater_and_drops_empty_entries() -> None:
    old = manifest()
    managed = record_update([], "creator", "Update", V1, None, old, "", T0)
    new = copy.deepcopy(old)
    new["spec"]["image"] = "other"
    managed = record_update(managed, "kubectl-patch", "Update", V1, old, new, "", T1)
    entries = by_manager(managed)
    assert entries["kubectl-patch", "Update"]["fieldsV1"] == {"f:spec": {"f:image": {}}}
    assert "f:image" not in entries["creator", "Update"]["fieldsV1"]["f:spec"]

    # Removed fields leave every entry; the creator still owns the spec map it created.
    bare = {"metadata": {"name": "sft"}, "spec": {"image": "other"}}
    managed = record_update(managed, "kubectl-edit", "Update", V1, new, bare, "", T2)
    assert by_manager(managed)["creator", "Update"]["fieldsV1"] == {"f:spec": {}}
    # An entry left with nothing is dropped.
    barer = {"metadata": {"name": "sft"}, "spec": {"task": "x"}}
    managed = record_update(managed, "kubectl-edit", "Update", V1, bare, barer, "", T3)
    assert [e["manager"] for e in managed] == ["creator", "kubectl-edit"]


def test_it_leaves_ownership_alone_when_nothing_changes() -> None:
    obj = manifest()
    managed = record_update([], "creator", "Update", V1, None, obj, "", T0)
    assert record_update(managed, "other", "Update", V1, obj, copy.deepcopy(obj), "", T3) == managed


def test_it_keeps_separate_update_entries_per_version_and_subresource() -> None:
    old = manifest()
    managed = record_update([], "ctl", "Update", V1, None, old, "", T0)
    newer = copy.deepcopy(old)
    newer["spec"]["task"] = "DPO"
    managed = record_update(managed, "ctl", "Update", V2, old, newer, "", T1)
    with_status = copy.deepcopy(newer)
    with_status["status"] = {"phase": "Ready"}
    managed = record_update(managed, "ctl", "Update", V1, newer, with_status, "status", T2)
    keys = [(e["apiVersion"], e.get("subresource", ""), e["time"]) for e in managed]
    assert keys == [(V1, "", T0), (V2, "", T1), (V1, "status", T2)]
    assert managed[2]["fieldsV1"] == {"f:status": {".": {}, "f:phase": {}}}


def test_it_updates_the_time_of_an_existing_entry() -> None:
    old = manifest()
    managed = record_update([], "ctl", "Update", V1, None, old, "", T0)
    new = copy.deepcopy(old)
    new["spec"]["task"] = "DPO"
    managed = record_update(managed, "ctl", "Update", V1, old, new, "", T2)
    assert len(managed) == 1
    assert managed[0]["time"] == T2


# Apply ---------------------------------------------------------------------------------------


def test_it_creates_with_apply() -> None:
    config = manifest()
    config["status"] = {"phase": "Ready"}  # ignored on the main resource
    config["metadata"]["uid"] = "client-uid"  # server-owned, ignored
    before = copy.deepcopy(config)
    merged, managed = do_apply(None, config, time=T0)
    assert config == before
    assert merged == manifest()
    assert managed == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": V1,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:args": {}, "f:image": {}, "f:task": {}},
            },
        }
    ]


def test_it_conflicts_with_a_manager_that_changed_a_field_since() -> None:
    merged, managed = do_apply(None, manifest(), time=T0)
    live = stored(merged, managed)
    patched = copy.deepcopy(live)
    patched["spec"]["image"] = "other"
    patched["metadata"]["managedFields"] = record_update(
        managed, "kubectl-client-side-apply", "Update", V1, live, patched, "", T1
    )
    with pytest.raises(ApplyConflict) as caught:
        do_apply(patched, manifest(), time=T2)
    error = caught.value
    assert error.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
        "using nodus.dev/v1beta1: .spec.image"
    )
    assert error.causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using nodus.dev/v1beta1',
            "field": ".spec.image",
        }
    ]
    assert error.conflicts == [
        Conflict(".spec.image", "kubectl-client-side-apply", V1, path=("f:spec", "f:image"))
    ]


def test_it_lets_force_take_ownership() -> None:
    merged, managed = do_apply(None, manifest(), time=T0)
    live = stored(merged, managed)
    patched = copy.deepcopy(live)
    patched["spec"]["image"] = "other"
    patched["metadata"]["managedFields"] = record_update(
        managed, "kubectl-patch", "Update", V1, live, patched, "", T1
    )
    forced, managed = do_apply(patched, manifest(), force=True, time=T2)
    assert forced["spec"]["image"] == "registry.local/sft:1"
    # The patcher owned nothing else, so its entry is gone.
    assert [(e["manager"], e["operation"], e["time"]) for e in managed] == [
        ("kubectl", "Apply", T2)
    ]
    assert forced["metadata"]["uid"] == "u-1"
    assert "managedFields" not in forced["metadata"]


def test_it_conflicts_between_two_appliers_without_naming_a_version() -> None:
    merged, managed = do_apply(None, manifest(), manager="alice", time=T0)
    live = stored(merged, managed)
    with pytest.raises(ApplyConflict) as caught:
        do_apply(live, manifest(task="DPO", image="mine"), manager="bob", time=T1)
    assert caught.value.message == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.image\n- .spec.task'
    )
    assert {c["message"] for c in caught.value.causes} == {'conflict with "alice"'}


def test_it_shares_ownership_of_equal_values() -> None:
    merged, managed = do_apply(None, manifest(), manager="alice", time=T0)
    live = stored(merged, managed)
    _, managed = do_apply(live, manifest(), manager="bob", time=T1)
    entries = by_manager(managed)
    assert entries["alice", "Apply"]["fieldsV1"] == entries["bob", "Apply"]["fieldsV1"]


def test_it_removes_fields_the_applier_no_longer_sets() -> None:
    config = manifest(defaults={"resources": {"gpu": {"count": 2}}})
    merged, managed = do_apply(None, config, time=T0)
    live = stored(merged, managed)
    smaller = manifest()
    del smaller["spec"]["args"]
    del smaller["metadata"]["labels"]
    pruned, managed = do_apply(live, smaller, time=T1)
    assert pruned["spec"] == {"task": "SFT", "image": "registry.local/sft:1"}
    assert "labels" not in pruned["metadata"]
    assert managed[0]["fieldsV1"] == {"f:spec": {"f:image": {}, "f:task": {}}}


def test_it_keeps_omitted_fields_that_another_manager_owns() -> None:
    merged, managed = do_apply(None, manifest(), manager="alice", time=T0)
    live = stored(merged, managed)
    merged, managed = do_apply(live, manifest(), manager="bob", time=T1)  # co-owns everything
    live = stored(merged, managed)
    smaller = manifest()
    del smaller["spec"]["args"]
    kept, managed = do_apply(live, smaller, manager="alice", time=T2)
    assert kept["spec"]["args"] == ["--epochs", "3"]
    assert ("f:args") in by_manager(managed)["bob", "Apply"]["fieldsV1"]["f:spec"]
    assert "f:args" not in by_manager(managed)["alice", "Apply"]["fieldsV1"]["f:spec"]


def test_it_merges_lists_of_maps_by_key() -> None:
    preset_a = {"model": "llama", "method": "LoRA", "resources": {"gpu": 1}}
    merged, managed = do_apply(None, manifest(presets=[preset_a]), time=T0)
    live = stored(merged, managed)
    # Another writer adds a preset of its own.
    edited = copy.deepcopy(live)
    edited["spec"]["presets"].append({"model": "qwen", "method": "Full"})
    edited["metadata"]["managedFields"] = update(managed, "console", live, edited, T1)
    # The applier changes its preset's resources and adds one more.
    changed_a = {"model": "llama", "method": "LoRA", "resources": {"gpu": 2}}
    preset_c = {"model": "mistral", "method": "LoRA"}
    result, managed = do_apply(edited, manifest(presets=[changed_a, preset_c]), time=T2)
    assert result["spec"]["presets"] == [
        changed_a,
        {"model": "qwen", "method": "Full"},
        preset_c,
    ]
    console = by_manager(managed)["console", "Update"]["fieldsV1"]
    assert list(console["f:spec"]["f:presets"]) == ['k:{"method":"Full","model":"qwen"}']


def test_it_removes_an_omitted_item_but_keeps_one_someone_else_touched() -> None:
    a = {"name": "a", "image": "img-a"}
    b = {"name": "b", "image": "img-b"}
    config = manifest(outputs=[a, b])
    merged, managed = do_apply(None, config, time=T0)
    live = stored(merged, managed)
    # A second manager changes b's image, so it owns .spec.outputs[name="b"].image.
    edited = copy.deepcopy(live)
    edited["spec"]["outputs"][1]["image"] = "img-b2"
    edited["metadata"]["managedFields"] = update(managed, "console", live, edited, T1)
    only_a = manifest(outputs=[a])
    result, managed = do_apply(edited, only_a, time=T2)
    # b survives with its key and the field the console owns; nothing of the applier's remains.
    assert result["spec"]["outputs"] == [a, {"name": "b", "image": "img-b2"}]
    mine = by_manager(managed)["kubectl", "Apply"]["fieldsV1"]["f:spec"]["f:outputs"]
    assert list(mine) == ['k:{"name":"a"}']

    # Without the console's field, omitting b removes it entirely.
    result, _ = do_apply(live, only_a, time=T2)
    assert result["spec"]["outputs"] == [a]


def test_it_merges_finalizers_as_a_set() -> None:
    config = manifest()
    config["metadata"]["finalizers"] = ["nodus.dev/cleanup"]
    merged, managed = do_apply(None, config, time=T0)
    live = stored(merged, managed)
    edited = copy.deepcopy(live)
    edited["metadata"]["finalizers"].append("example.com/hold")
    edited["metadata"]["managedFields"] = update(managed, "controller", live, edited, T1)
    result, _ = do_apply(edited, config, time=T2)
    assert result["metadata"]["finalizers"] == ["nodus.dev/cleanup", "example.com/hold"]
    without = manifest()
    result, _ = do_apply(stored(result, edited["metadata"]["managedFields"]), without, time=T3)
    assert result["metadata"]["finalizers"] == ["example.com/hold"]


def test_it_replaces_atomic_lists_whole_and_conflicts_on_them_whole() -> None:
    merged, managed = do_apply(None, manifest(), manager="alice", time=T0)
    live = stored(merged, managed)
    with pytest.raises(ApplyConflict) as caught:
        do_apply(live, manifest(args=["--epochs", "4"]), manager="bob", time=T1)
    assert [c.field for c in caught.value.conflicts] == [".spec.args"]
    result, _ = do_apply(live, manifest(args=["--lr"]), manager="alice", time=T1)
    assert result["spec"]["args"] == ["--lr"]


def test_it_hands_untracked_fields_to_before_first_apply() -> None:
    live = stored(manifest(), [])
    with pytest.raises(ApplyConflict) as caught:
        do_apply(live, manifest(task="DPO"), time=T1)
    assert caught.value.message == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" '
        "using nodus.dev/v1beta1: .spec.task"
    )
    _, managed = do_apply(live, manifest(), time=T1)
    assert [e["manager"] for e in managed] == ["kubectl", "before-first-apply"]


def test_it_applies_status_only_through_the_status_subresource() -> None:
    merged, managed = do_apply(None, manifest(), time=T0)
    live = stored(merged, managed)
    config = manifest(task="ignored")
    config["status"] = {"phase": "Ready"}
    result, managed = do_apply(live, config, manager="controller", subresource="status", time=T1)
    assert result["status"] == {"phase": "Ready"}
    assert result["spec"]["task"] == "SFT"
    status_entry = by_manager(managed)["controller", "Apply"]
    assert status_entry["subresource"] == "status"
    assert status_entry["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_it_does_not_touch_the_time_of_a_no_op_apply() -> None:
    merged, managed = do_apply(None, manifest(), time=T0)
    live = stored(merged, managed)
    again, managed = do_apply(live, manifest(), time=T3)
    assert managed[0]["time"] == T0
    assert again["spec"] == live["spec"]


def test_it_does_not_mutate_its_inputs() -> None:
    merged, managed = do_apply(None, manifest(presets=[{"model": "m", "method": "x"}]), time=T0)
    live = stored(merged, managed)
    config = manifest(presets=[{"model": "m", "method": "x", "gpu": 1}])
    snapshot = copy.deepcopy((live, config))
    result, _ = do_apply(live, config, time=T1)
    result["spec"]["presets"][0]["gpu"] = 99
    assert (live, config) == snapshot


def test_it_drops_nulls_and_server_metadata_from_applied_configuration() -> None:
    config = manifest(image=None)
    config["metadata"].update(resourceVersion="5", managedFields=[{"manager": "x"}])
    cleaned = applied_config(config)
    assert "image" not in cleaned["spec"]
    assert "resourceVersion" not in cleaned["metadata"]
    assert "managedFields" not in cleaned["metadata"]


def test_it_orders_merged_items_like_structured_merge_diff() -> None:
    def names(*keys: str) -> list[dict[str, str]]:
        return [{"name": k} for k in keys]

    live, config = {"outputs": names("a", "b", "c")}, {"outputs": names("c", "a")}
    merged = merge_objects({"spec": live}, {"spec": config}, TYPES)
    assert merged["spec"]["outputs"] == names("b", "c", "a")
    merged = merge_objects({"spec": live}, {"spec": {"outputs": names("a", "x", "c")}}, TYPES)
    # Live-only items keep their place ahead of new applied items.
    assert merged["spec"]["outputs"] == names("a", "b", "x", "c")


def test_it_formats_conflict_messages_for_subresources() -> None:
    conflict = Conflict(".status.phase", "ctl", V1, "Update", "status")
    assert conflict_message([conflict]) == (
        'Apply failed with 1 conflict: conflict with "ctl" with subresource "status" '
        "using nodus.dev/v1beta1: .status.phase"
    )


# Types from the schema -----------------------------------------------------------------------

SCHEMA_TYPES = ListTypes(
    lists={
        "spec.modes": ("set", ()),
        "spec.outputs": ("map", ("name",)),
        "spec.args": ("atomic", ()),
    },
    atomic_maps=frozenset({"spec.selector"}),
    deduced=frozenset({"spec.parameters"}),
)


def typed_apply(live: Any, config: Any, manager: str, force: bool = False, **kw: Any):
    managed = (live or {}).get("metadata", {}).get("managedFields", [])
    return apply(
        live,
        config,
        manager,
        force,
        managed,
        kw.pop("api_version", V1),
        kw.pop("time", T1),
        list_map_keys=SCHEMA_TYPES,
        **kw,
    )


def test_a_set_declared_by_the_schema_is_owned_item_by_item() -> None:
    merged, managed = typed_apply(None, manifest(modes=["Train"]), "alice", time=T0)
    merged, managed = typed_apply(stored(merged, managed), manifest(modes=["Evaluate"]), "bob")
    assert merged["spec"]["modes"] == ["Train", "Evaluate"]
    assert by_manager(managed)["bob", "Apply"]["fieldsV1"]["f:spec"]["f:modes"] == {
        'v:"Evaluate"': {}
    }
    # Alice drops hers: Bob's stays.
    merged, _ = typed_apply(stored(merged, managed), manifest(), "alice", time=T2)
    assert merged["spec"]["modes"] == ["Evaluate"]


def test_an_undeclared_list_is_atomic_whatever_its_items() -> None:
    merged, managed = apply(None, manifest(modes=["Train"]), "alice", False, [], V1, T0)
    live = stored(merged, managed)
    with pytest.raises(ApplyConflict) as caught:
        apply(live, manifest(modes=["Evaluate"]), "bob", False, managed, V1, T1)
    assert [c.field for c in caught.value.conflicts] == [".spec.modes"]


def test_an_atomic_map_is_owned_and_replaced_whole() -> None:
    config = manifest(selector={"team": "a", "tier": "gold"})
    merged, managed = typed_apply(None, config, "alice", time=T0)
    assert by_manager(managed)["alice", "Apply"]["fieldsV1"]["f:spec"]["f:selector"] == {}
    live = stored(merged, managed)
    with pytest.raises(ApplyConflict) as caught:
        typed_apply(live, manifest(selector={"team": "a"}), "bob")
    assert [c.field for c in caught.value.conflicts] == [".spec.selector"]
    # Forced, Bob's map replaces Alice's whole (a granular map would have kept "tier").
    merged, managed = typed_apply(live, manifest(selector={"team": "b"}), "bob", force=True)
    assert merged["spec"]["selector"] == {"team": "b"}
    assert "f:selector" not in by_manager(managed)["alice", "Apply"]["fieldsV1"]["f:spec"]


def test_keys_of_an_open_map_are_members_of_their_own() -> None:
    config = manifest(parameters={"properties": {"lr": {"type": "number"}}})
    _, managed = typed_apply(None, config, "alice", time=T0)
    parameters = by_manager(managed)["alice", "Apply"]["fieldsV1"]["f:spec"]["f:parameters"]
    assert parameters == {
        "f:properties": {".": {}, "f:lr": {".": {}, "f:type": {}}},
    }


def test_force_moves_only_the_conflicting_fields() -> None:
    merged, managed = typed_apply(None, manifest(outputs=[{"name": "a", "path": "/a"}]), "alice")
    live = stored(merged, managed)
    config = manifest(outputs=[{"name": "a", "path": "/b"}])
    merged, managed = typed_apply(live, config, "bob", force=True, time=T2)
    alice = by_manager(managed)["alice", "Apply"]["fieldsV1"]["f:spec"]
    assert alice["f:outputs"] == {'k:{"name":"a"}': {".": {}, "f:name": {}}}
    assert "f:task" in alice  # the same value: co-owned, not taken


# Client-side apply to server-side apply --------------------------------------------------------


def _client_side(config: dict[str, Any]) -> dict[str, Any]:
    annotated = copy.deepcopy(config)
    annotated["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(config)}
    managed = record_update([], "kubectl-client-side-apply", "Update", V1, None, annotated, "", T0)
    return stored(annotated, managed)


def test_kubectl_takes_over_fields_whose_value_matches_the_last_applied_annotation() -> None:
    live = _client_side(manifest())
    changed = manifest(task="DPO")
    with pytest.raises(ApplyConflict):
        do_apply(live, changed, manager="someone")
    merged, managed = do_apply(live, changed, manager=KUBECTL)
    assert merged["spec"]["task"] == "DPO"
    assert "f:task" in by_manager(managed)["kubectl", "Apply"]["fieldsV1"]["f:spec"]
    # The annotation now records what kubectl applied, as Go would encode it.
    annotation = merged["metadata"]["annotations"][LAST_APPLIED]
    assert annotation.endswith("}\n")
    assert json.loads(annotation)["spec"]["task"] == "DPO"


def test_kubectl_conflicts_on_fields_changed_since_the_client_side_apply() -> None:
    live = _client_side(manifest())
    live["spec"]["image"] = "edited"
    live["metadata"]["managedFields"] = record_update(
        live["metadata"]["managedFields"],
        "kubectl-edit",
        "Update",
        V1,
        _client_side(manifest()),
        live,
        "",
        T1,
    )
    with pytest.raises(ApplyConflict) as caught:
        do_apply(live, manifest(task="DPO"), manager=KUBECTL, time=T2)
    assert [(c.manager, c.field) for c in caught.value.conflicts] == [
        ("kubectl-edit", ".spec.image")
    ]


def test_it_writes_json_as_go_does() -> None:
    assert go_json({"b": "<&>", "a": [1, 2.5], "c": "é\u2028"}) == (
        '{"a":[1,2.5],"b":"\\u003c\\u0026\\u003e","c":"é\\u2028"}'
    )


# managedFields written by clients -------------------------------------------------------------

LIVE = [
    {
        "manager": "alice",
        "operation": "Apply",
        "apiVersion": V1,
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:task": {}}},
    }
]


def test_it_takes_managed_fields_a_client_writes_when_they_decode() -> None:
    written = [dict(LIVE[0], manager="kubectl")]
    assert incoming_entries(written, LIVE, "") == written
    assert incoming_entries(None, LIVE, "") == LIVE  # not sent: the live ones
    assert incoming_entries([], LIVE, "") == LIVE  # empty: kube's round trip drops it
    assert incoming_entries([{}], LIVE, "") == []  # one empty entry: reset
    assert incoming_entries(written, LIVE, "status") == LIVE  # never through a subresource


@pytest.mark.parametrize(
    "change",
    [
        {"operation": "Patch"},
        {"apiVersion": ""},
        {"fieldsType": None},
        {"fieldsType": "FieldsV2"},
        {"fieldsV1": {"x:bad": {}}},
        {"fieldsV1": {"k:not-json": {}}},
        {"fieldsV1": {"f:spec": []}},
        {"manager": 7},
    ],
)
def test_it_keeps_the_live_entries_when_written_ones_do_not_decode(change: dict) -> None:
    written = [{**LIVE[0], **change}]
    assert incoming_entries(written, LIVE, "") == LIVE


def test_it_validates_entries_as_apimachinery_does() -> None:
    assert validation_errors(LIVE) == []
    problems = validation_errors(
        [
            dict(LIVE[0], manager="m" * 129),
            dict(LIVE[0], manager="bell\a", subresource="s" * 257),
            dict(LIVE[0], operation="Patch", fieldsType="FieldsV2"),
        ]
    )
    assert [(p.field, p.message) for p in problems] == [
        ("metadata.managedFields[0].manager", "Too long: may not be more than 128 bytes"),
        (
            "metadata.managedFields[1].manager",
            'Invalid value: "bell\\u0007": invalid character U+0007 (at position 4)',
        ),
        ("metadata.managedFields[1].subresource", "Too long: may not be more than 256 bytes"),
        (
            "metadata.managedFields[2].operation",
            'Invalid value: "Patch": must be `Apply` or `Update`',
        ),
        ("metadata.managedFields[2].fieldsType", 'Invalid value: "FieldsV2": must be `FieldsV1`'),
    ]


def test_every_list_of_both_kinds_declares_its_type() -> None:
    from runtimes.apimachinery.schema_nodes import Field
    from runtimes.registry.accelerator.schema import ACCELERATOR
    from runtimes.registry.trainingruntime.schema import TRAINING_RUNTIME

    for root in (TRAINING_RUNTIME, ACCELERATOR):
        pending: list[tuple[Field, str]] = [(root, "")]
        while pending:
            node, path = pending.pop()
            if node.type == "array":
                assert node.list_type in ("atomic", "set", "map"), path
                assert bool(node.list_keys) == (node.list_type == "map"), path
            children = [*node.properties.items()]
            if node.items is not None:
                children.append(("[]", node.items))
            pending.extend((child, f"{path}.{key}") for key, child in children)
    types = merge_types(TRAINING_RUNTIME)
    assert types.declared("spec.modes") == "set"
    assert types.declared("spec.defaults.sidecars.env") == "map"
    assert types.atomic_map("spec.defaults.sidecars.env.valueFrom.secretKeyRef")
    assert types.free("spec.parameters.properties")


def test_an_update_that_creates_a_list_of_items_owns_the_list_too() -> None:
    created = manifest(outputs=[{"name": "a", "path": "/a"}], modes=["Train"])
    created["metadata"]["finalizers"] = ["nodus.dev/x"]
    [entry] = record_update(
        [], "creator", "Update", V1, None, created, "", T0, list_map_keys=SCHEMA_TYPES
    )
    fields = entry["fieldsV1"]
    assert fields["f:metadata"]["f:finalizers"] == {".": {}, 'v:"nodus.dev/x"': {}}
    assert fields["f:spec"]["f:modes"] == {".": {}, 'v:"Train"': {}}
    assert fields["f:spec"]["f:outputs"] == {
        ".": {},
        'k:{"name":"a"}': {".": {}, "f:name": {}, "f:path": {}},
    }
    # An applier's set never holds the list itself, only its items.
    _, managed = typed_apply(None, created, "applier")
    assert "." not in by_manager(managed)["applier", "Apply"]["fieldsV1"]["f:spec"]["f:modes"]


def _fill_interconnect(obj: dict[str, Any]) -> None:
    """A kind's defaulting: each GPU of the (atomic) list gets an interconnect."""
    for gpu in obj.get("spec", {}).get("gpus", []):
        gpu.setdefault("interconnect", "Any")


def test_kubectl_takes_over_an_atomic_list_the_server_completed_with_defaults() -> None:
    """What the client applied, once the server's defaults fill it, is what is live: the
    annotation still names it, so kubectl's first server-side apply takes it over (kube's own
    lastAppliedManager, comparing the annotation undefaulted, would refuse)."""
    live = _client_side(manifest(gpus=[{"type": "H100"}]))
    _fill_interconnect(live)
    config = manifest(gpus=[{"type": "H100"}])
    config["metadata"]["labels"]["tier"] = "gold"
    with pytest.raises(ApplyConflict) as caught:
        do_apply(live, config, manager=KUBECTL)
    assert [c.field for c in caught.value.conflicts] == [".spec.gpus"]
    merged, managed = do_apply(live, config, manager=KUBECTL, default=_fill_interconnect)
    assert merged["metadata"]["labels"]["tier"] == "gold"
    assert "f:gpus" in by_manager(managed)["kubectl", "Apply"]["fieldsV1"]["f:spec"]
