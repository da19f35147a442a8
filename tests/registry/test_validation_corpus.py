"""Every invalid manifest in tests/invalid_manifests yields exactly its expected causes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from runtimes.registry.trainingruntime.schema import (
    CHECKPOINT_STRATEGIES,
    ENVIRONMENT_TASKS,
    INTERCONNECTS,
    LAUNCHERS,
    METHODS,
    MODES,
    TASKS,
)
from runtimes.registry.trainingruntime.validation import spec_warnings, validate_runtime
from tests.invalid_manifests import base, cases, manifest, stub_catalog

CASES = cases()
CATALOG = stub_catalog()


def test_it_starts_from_a_valid_base_without_warnings() -> None:
    runtime = base()
    assert validate_runtime(runtime, CATALOG) == []
    assert spec_warnings(runtime["spec"], CATALOG) == []


def test_it_has_enough_cases_with_unique_names() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) >= 80
    assert len(set(names)) == len(names)


def test_it_covers_every_numbered_rule_but_fieldvalidation() -> None:
    # Rule 13 (unknown fields) is a 400 under Strict, not a 422 cause; registry/test_schema.py
    # has it.
    covered = {case["rule"] for case in CASES}
    assert set(range(1, 13)) <= covered


@pytest.mark.parametrize(
    ("field_suffix", "values"),
    [
        ("spec.task", TASKS),
        ("spec.launcher", LAUNCHERS),
        ("spec.modes[1]", MODES),
        ("spec.checkpointing.strategy", CHECKPOINT_STRATEGIES),
        (".method", METHODS),
        (".interconnect", INTERCONNECTS),
        ("spec.environmentTasks", ENVIRONMENT_TASKS),
        (".count", (1, 2, 4, 8)),
    ],
)
def test_it_has_an_unsupported_value_case_per_enum(field_suffix: str, values: Any) -> None:
    reasons = [
        expected["reason"]
        for case in CASES
        for expected in case["expect"]
        if expected["field"].endswith(field_suffix)
    ]
    assert "FieldValueNotSupported" in reasons


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_it_reports_exactly_the_expected_causes(case: dict[str, Any]) -> None:
    errors = validate_runtime(manifest(case), CATALOG)
    got = Counter((error.field, error.reason) for error in errors)
    expected = Counter((item["field"], item["reason"]) for item in case["expect"])
    assert got == expected, [str(error) for error in errors]
    for error in errors:
        assert error.message
        if error.reason == "FieldValueNotSupported":
            assert "supported values: " in error.message


def test_it_agrees_with_the_real_accelerator_catalog() -> None:
    from runtimes.catalog.accelerators import catalog

    real = catalog()
    assert set(real.ids) == set(CATALOG.ids)
    assert set(real.families) == set(CATALOG.families)
    assert set(real.classes) == set(CATALOG.classes)
    failures = []
    for case in CASES:
        got = sorted((e.field, e.reason) for e in validate_runtime(manifest(case), real))
        if got != sorted((e["field"], e["reason"]) for e in case["expect"]):
            failures.append(case["name"])
    assert failures == []
