"""Merge patch and JSON patch: the RFC appendix examples plus kube-relevant edge cases."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonpointer import JsonPointer

from runtimes.apimachinery.patches import (
    PatchError,
    create_merge_patch,
    json_equal,
    json_patch,
    merge_patch,
    parse_pointer,
)

# RFC 7386 Appendix A, verbatim.
RFC7386 = [
    ('{"a":"b"}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'),
    ('{"a":"b"}', '{"a":null}', "{}"),
    ('{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'),
    ('{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'),
    ('{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'),
    ('{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'),
    ('["a","b"]', '["c","d"]', '["c","d"]'),
    ('{"a":"b"}', '["c"]', '["c"]'),
    ('{"a":"foo"}', "null", "null"),
    ('{"a":"foo"}', '"bar"', '"bar"'),
    ('{"e":null}', '{"a":1}', '{"e":null,"a":1}'),
    ("[1,2]", '{"a":"b","c":null}', '{"a":"b"}'),
    ("{}", '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'),
]


@pytest.mark.parametrize(("original", "patch", "result"), RFC7386)
def test_it_merges_the_rfc7386_examples(original: str, patch: str, result: str) -> None:
    target, body = json.loads(original), json.loads(patch)
    before = copy.deepcopy(target), copy.deepcopy(body)
    assert merge_patch(target, body) == json.loads(result)
    assert (target, body) == before  # inputs untouched


def test_it_does_not_share_structure_with_its_inputs() -> None:
    target = {"spec": {"sidecars": [{"name": "a"}]}, "keep": {"x": [1]}}
    patch = {"spec": {"new": {"deep": [1]}}}
    merged = merge_patch(target, patch)
    merged["keep"]["x"].append(2)
    merged["spec"]["new"]["deep"].append(2)
    assert target["keep"]["x"] == [1]
    assert patch["spec"]["new"]["deep"] == [1]


def test_it_applies_a_kubectl_style_merge_patch() -> None:
    live = {
        "metadata": {"name": "x", "labels": {"a": "1", "b": "2"}},
        "spec": {"task": "SFT", "image": "img:1"},
    }
    patched = merge_patch(live, {"metadata": {"labels": {"b": None}}, "spec": {"task": "DPO"}})
    assert patched == {
        "metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {"task": "DPO", "image": "img:1"},
    }


def test_it_creates_a_two_way_merge_patch() -> None:
    original = {"a": 1, "b": {"c": 2, "d": [1, 2]}, "gone": True, "same": {"x": 1}}
    modified = {"a": 1, "b": {"c": 3, "d": [1, 2], "e": None}, "new": [1], "same": {"x": 1}}
    patch = create_merge_patch(original, modified)
    assert patch == {"b": {"c": 3, "e": None}, "gone": None, "new": [1]}
    assert create_merge_patch(original, copy.deepcopy(original)) == {}
    assert create_merge_patch({"a": 1}, [1]) == [1]
    assert create_merge_patch({"n": 1}, {"n": 1.0}) == {}
    assert create_merge_patch({"n": 1}, {"n": True}) == {"n": True}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)
NULL_FREE_OBJECTS = st.dictionaries(
    st.text(max_size=3),
    st.recursive(
        st.booleans() | st.integers() | st.text(max_size=5),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=3), children, max_size=3)
        ),
        max_leaves=10,
    ),
    max_size=4,
)


@given(JSON_VALUES, NULL_FREE_OBJECTS)
def test_it_round_trips_create_then_apply(original: Any, modified: dict[str, Any]) -> None:
    # Merge patches cannot express null values in the target, so the modified side has none.
    patch = create_merge_patch(original, modified)
    assert merge_patch(original, patch) == modified


# RFC 6902 Appendix A (A.13, a duplicate-key JSON text, is a parser concern and is left out).
RFC6902_OK = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
]


@pytest.mark.parametrize(("doc", "ops", "result"), RFC6902_OK)
def test_it_applies_the_rfc6902_examples(doc: Any, ops: list[Any], result: Any) -> None:
    before = copy.deepcopy(doc), copy.deepcopy(ops)
    assert json_patch(doc, ops) == result
    assert (doc, ops) == before


@pytest.mark.parametrize(
    ("doc", "ops", "message"),
    [
        # A.9 test failure
        (
            {"baz": "qux"},
            [{"op": "test", "path": "/baz", "value": "bar"}],
            "testing value /baz failed: test failed",
        ),
        # A.12 add to a nonexistent target
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz/bat", "value": "qux"}],
            'add operation does not apply: doc is missing path: "/baz/bat": missing value',
        ),
        # A.15 strings are not numbers
        (
            {"/": 9, "~1": 10},
            [{"op": "test", "path": "/~01", "value": "10"}],
            "testing value /~01 failed: test failed",
        ),
    ],
)
def test_it_fails_the_rfc6902_error_examples(doc: Any, ops: list[Any], message: str) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch(doc, ops)
    assert caught.value.message == message
    assert not caught.value.malformed


def test_it_names_the_path_when_a_kubectl_test_op_fails() -> None:
    live = {"spec": {"task": "SFT"}}
    with pytest.raises(PatchError, match=r"^testing value /spec/task failed: test failed$"):
        json_patch(live, [{"op": "test", "path": "/spec/task", "value": "nope"}])


def test_it_applies_nothing_when_a_later_op_fails() -> None:
    live = {"spec": {"task": "SFT"}}
    ops = [
        {"op": "replace", "path": "/spec/task", "value": "DPO"},
        {"op": "test", "path": "/spec/task", "value": "SFT"},
    ]
    with pytest.raises(PatchError):
        json_patch(live, ops)
    assert live == {"spec": {"task": "SFT"}}


def test_it_removes_finalizers_the_way_kubectl_does() -> None:
    live = {"metadata": {"name": "x", "finalizers": ["nodus.dev/cleanup", "b"]}}
    assert json_patch(live, [{"op": "remove", "path": "/metadata/finalizers"}]) == {
        "metadata": {"name": "x"}
    }
    assert json_patch(live, [{"op": "remove", "path": "/metadata/finalizers/0"}]) == {
        "metadata": {"name": "x", "finalizers": ["b"]}
    }


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [{"op": "remove", "path": "/spec/missing"}],
            "error in remove for path: '/spec/missing': Unable to remove nonexistent key: "
            "missing: missing value",
        ),
        (
            [{"op": "replace", "path": "/spec/missing", "value": 1}],
            "replace operation does not apply: doc is missing key: /spec/missing: missing value",
        ),
        (
            [{"op": "add", "path": "/spec/list/3", "value": 1}],
            "error in add for path: '/spec/list/3': Unable to access invalid index: 3: "
            "invalid index referenced",
        ),
        (
            [{"op": "remove", "path": "/spec/list/2"}],
            "error in remove for path: '/spec/list/2': Unable to access invalid index: 2: "
            "invalid index referenced",
        ),
        (
            [{"op": "add", "path": "/spec/list/01", "value": 1}],
            "error in add for path: '/spec/list/01': value was not a proper array index: '01'",
        ),
        (
            [{"op": "remove", "path": "/spec/list/-"}],
            "error in remove for path: '/spec/list/-': value was not a proper array index: '-'",
        ),
        (
            [{"op": "move", "from": "/spec/nope", "path": "/spec/x"}],
            "move operation does not apply: doc is missing from path: /spec/nope: missing value",
        ),
        (
            [{"op": "move", "from": "/spec", "path": "/spec/inner"}],
            "move operation does not apply: cannot move /spec into its child /spec/inner",
        ),
        (
            [{"op": "copy", "from": "/nope", "path": "/x"}],
            "copy operation does not apply: doc is missing from path: /nope: missing value",
        ),
        (
            [{"op": "test", "path": "/spec/nope", "value": None}],
            "test operation does not apply: is missing path: /spec/nope: missing value",
        ),
        ([{"op": "add", "path": "/x"}], "add operation missing value field: missing value"),
        ([{"op": "add", "value": 1}], "add operation missing path field: missing value"),
        ([{"op": "frobnicate", "path": "/x"}], "Unexpected kind: frobnicate"),
        ([{"path": "/x"}], "Unexpected kind: unknown"),
        (
            [{"op": "add", "path": "spec", "value": 1}],
            'invalid JSON pointer "spec": must be empty or start with "/"',
        ),
        (
            [{"op": "add", "path": "/a~2", "value": 1}],
            'invalid JSON pointer "/a~2": bad escape in "a~2"',
        ),
    ],
)
def test_it_explains_failures(ops: list[Any], message: str) -> None:
    doc = {"spec": {"list": [1, 2], "task": "SFT"}}
    with pytest.raises(PatchError) as caught:
        json_patch(doc, ops)
    assert caught.value.message == message


@pytest.mark.parametrize("ops", [{"op": "add"}, "add", [1], [["op", "add"]]])
def test_it_marks_documents_that_are_not_json_patches_as_malformed(ops: Any) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch({}, ops)
    assert caught.value.malformed


def test_it_handles_whole_document_pointers_and_copies() -> None:
    doc = {"a": {"b": [1]}}
    assert json_patch(doc, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert json_patch(doc, [{"op": "add", "path": "", "value": {"z": 1}}]) == {"z": 1}
    assert json_patch(doc, [{"op": "test", "path": "", "value": {"a": {"b": [1.0]}}}]) == doc
    copied = json_patch(doc, [{"op": "copy", "from": "/a", "path": "/c"}])
    copied["c"]["b"].append(2)
    assert copied["a"] == {"b": [1]}
    assert json_patch(doc, [{"op": "move", "from": "/a", "path": "/a"}]) == doc
    assert json_patch(
        {"a/b": {"m~n": 1}}, [{"op": "replace", "path": "/a~1b/m~0n", "value": 2}]
    ) == {"a/b": {"m~n": 2}}


def test_it_compares_json_values_by_json_rules() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": None})
    assert not json_equal("1", 1)
    assert parse_pointer("/~01/~10") == ["~1", "/0"]
    assert parse_pointer("/") == [""]


@pytest.mark.parametrize(
    ("pointer", "token"),
    [("/a~2", "a~2"), ("/ok/b~", "b~"), ("/~~01", "~~01"), ("/x/~/y~0", "~")],
)
def test_it_names_the_badly_escaped_token(pointer: str, token: str) -> None:
    with pytest.raises(PatchError) as caught:
        parse_pointer(pointer)
    assert caught.value.message == f'invalid JSON pointer "{pointer}": bad escape in "{token}"'


def test_it_reads_pointers_as_jsonpointer_does() -> None:
    for pointer in ["", "/", "//", "/a~1b/m~0n/0", "/~01/~10", "/-"]:
        assert parse_pointer(pointer) == JsonPointer(pointer).parts


# Bounds: a short JSON patch must not build an unbounded document.


def test_it_refuses_more_json_patch_operations_than_kube_allows() -> None:
    from runtimes.apimachinery import bounds

    ops = [{"op": "test", "path": "/a", "value": 1}] * (bounds.MAX_JSON_PATCH_OPS + 1)
    with pytest.raises(bounds.BoundExceeded) as caught:
        json_patch({"a": 1}, ops)
    assert caught.value.reason == "RequestEntityTooLarge"
    assert str(caught.value) == (
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    )
    assert json_patch({"a": 1}, ops[: bounds.MAX_JSON_PATCH_OPS]) == {"a": 1}


def test_it_bounds_what_copy_operations_duplicate() -> None:
    from runtimes.apimachinery import bounds

    # Each copy puts the whole document under a new key: the document doubles every time.
    ops = [{"op": "copy", "from": "", "path": "/" + "bc"[i % 2]} for i in range(64)]
    with pytest.raises(bounds.BoundExceeded, match="copy operations duplicate more than"):
        json_patch({"a": [1, 2]}, ops)


def test_it_refuses_paths_deeper_than_any_object() -> None:
    with pytest.raises(PatchError, match="more than 100 levels deep") as caught:
        json_patch({}, [{"op": "add", "path": "/a" * 101, "value": 1}])
    assert caught.value.malformed


@pytest.mark.parametrize("token", ["9" * 5000, "9" * 19, "\u00b2", "\u0661"])
def test_it_answers_odd_array_indices_with_a_patch_error(token: str) -> None:
    for op in ("add", "replace", "remove"):
        with pytest.raises(PatchError):
            json_patch({"a": [1, 2]}, [{"op": op, "path": f"/a/{token}", "value": 0}])
    with pytest.raises(PatchError):
        json_patch({"a": [[1]]}, [{"op": "add", "path": f"/a/{token}/0", "value": 0}])
