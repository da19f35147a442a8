"""JSON bodies: orjson's values, refused past the bounds before the object is built."""

from __future__ import annotations

import time

import orjson
import pytest

from runtimes.apimachinery import bounds, jsoncodec


def test_it_reads_json_as_orjson_does() -> None:
    raw = b'{"a": [1, 2.5, true, null, "x,y:{["], "b\\"": {"c": "\\\\"}}'
    assert jsoncodec.loads(raw) == orjson.loads(raw)


@pytest.mark.parametrize("levels", [101, 1_025, 10_000])
def test_it_refuses_more_than_100_levels(levels: int) -> None:
    with pytest.raises(bounds.BoundExceeded, match="nested more than 100 levels deep"):
        jsoncodec.loads(b"[" * levels + b"]" * levels)
    assert jsoncodec.loads(b"[" * 100 + b"]" * 100)


def test_it_refuses_too_many_nodes_before_decoding() -> None:
    raw = b"[" + b",".join([b"{}"] * (bounds.MAX_NODES + 1)) + b"]"
    with pytest.raises(bounds.BoundExceeded) as caught:
        jsoncodec.loads(raw)
    assert caught.value.reason == "RequestEntityTooLarge"


def test_it_does_not_count_structure_inside_strings() -> None:
    # Every string is full of commas and brackets: the rough count exceeds the budget, the exact
    # one (strings masked) does not.
    text = '"' + ",[{:" * 10 + '\\"\\\\"'
    raw = orjson.dumps([text] * 20_000)
    assert jsoncodec._node_count(raw, exact=False) > bounds.MAX_NODES
    assert jsoncodec._node_count(raw, exact=True) == 20_001
    assert len(jsoncodec.loads(raw)) == 20_000


def test_it_counts_nodes_exactly_for_valid_json() -> None:
    for value in ({"a": [1, 2, {}], "b": "x,y"}, [[], [[]], {}], {'k\\"': ["\\", '"{', []]}):
        raw = orjson.dumps(value, option=orjson.OPT_INDENT_2)
        assert jsoncodec._node_count(raw, exact=True) == bounds.count_nodes(value)


@pytest.mark.parametrize(
    "raw",
    [b"NaN", b"[Infinity]", b"1e999", b"1" * 5000, b'["\xff"]', b"{", b"", b'{"a":1}x'],
)
def test_it_reports_what_is_not_json(raw: bytes) -> None:
    with pytest.raises(jsoncodec.JSONError):
        jsoncodec.loads(raw)


def test_it_decodes_a_large_body_quickly() -> None:
    raw = orjson.dumps({f"k{i}": {"v": [i, "x"]} for i in range(20_000)})
    started = time.perf_counter()
    assert len(jsoncodec.loads(raw)) == 20_000
    assert time.perf_counter() - started < 2
