"""Every kind the API serves is laid out alike: registry/<kind>/schema.py and strategy.py."""

from __future__ import annotations

import importlib

import pytest

from runtimes.registry.kinds import all_kinds
from runtimes.registry.resources import ResourceType


@pytest.mark.parametrize("rt", all_kinds(), ids=lambda rt: f"{rt.plural}.{rt.group or 'core'}")
def test_each_kind_has_its_schema_and_strategy_in_its_own_package(rt: ResourceType) -> None:
    package = f"runtimes.registry.{rt.kind.lower()}"
    schema = importlib.import_module(f"{package}.schema")
    strategy = importlib.import_module(f"{package}.strategy")
    assert (rt.kind, rt.plural) == (schema.KIND, schema.PLURAL)
    assert rt.strategy is strategy.STRATEGY
    assert rt.columns == strategy.COLUMNS
