"""Bounds on decoded bodies: depth and node counts without recursion, and their Status."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.apimachinery import bounds


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_it_measures_depth_without_recursion() -> None:
    assert bounds.depth_of(1) == 0
    assert bounds.depth_of({}) == 1
    assert bounds.depth_of({"a": [1, {"b": []}]}) == 4
    assert bounds.depth_of(_nested(100)) == 100
    # Far past the interpreter's stack; counting stops just past the bound.
    assert bounds.depth_of(_nested(50_000)) == bounds.MAX_DEPTH + 1


def test_it_counts_keys_scalars_and_containers() -> None:
    assert bounds.count_nodes({"a": [1, 2, {}], "b": "x"}) == 8
    assert bounds.count_nodes([[]] * 10, stop_after=5) == 6


def test_it_checks_both_bounds_with_their_status() -> None:
    bounds.check(_nested(bounds.MAX_DEPTH))
    with pytest.raises(bounds.BoundExceeded) as deep:
        bounds.check(_nested(bounds.MAX_DEPTH + 1), "the patched object")
    error = deep.value.api_error()
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == "the patched object is nested more than 100 levels deep"
    assert error.fix is not None
    assert "100 levels" in error.fix
    with pytest.raises(bounds.BoundExceeded) as large:
        bounds.check([0] * bounds.MAX_NODES)
    assert large.value.api_error().code == 413
