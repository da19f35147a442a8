"""The official JSON Schema Test Suite (draft 2020-12) against the parameter validator, the
runtime's admission of a parameter schema, and the error formatter under random values."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.catalog.parameters import parameter_errors
from runtimes.registry.trainingruntime.parameter_schema import parameters_errors
from tests.catalog.json_schema_differences import REASONS, reason_for
from tests.support.json_schema_suite import Case, cases, suite_root


@pytest.fixture(scope="module")
def suite() -> list[Case]:
    found = list(cases(suite_root()))
    assert len(found) > 1500, "the suite was not unpacked whole"
    return found


def valid(case: Case) -> bool:
    return parameter_errors(case.schema, case.data, "parameters") == []


def test_every_case_passes_or_differs_for_a_listed_reason(suite: list[Case]) -> None:
    unexplained: list[str] = []
    needed: Counter[str] = Counter()
    for case in suite:
        if valid(case) == case.valid:
            continue
        reason = reason_for(case)
        if reason is None:
            unexplained.append(case.id)
        else:
            needed[reason] += 1
    assert unexplained == [], "\n".join(unexplained)
    assert set(needed) == set(REASONS), (
        f"a listed reason no case needs: {set(REASONS) - set(needed)}"
    )
    print("\nsuite cases differing, by reason:", dict(needed), "of", len(suite))


def test_admission_judges_every_suite_schema_without_failing(suite: list[Case]) -> None:
    """A runtime whose parameters are any of the suite's schemas is accepted or refused with
    field errors under spec.parameters: never an exception (a 500)."""
    for schema in {repr(c.schema): c.schema for c in suite if isinstance(c.schema, dict)}.values():
        for error in parameters_errors({"parameters": schema}):
            assert isinstance(error, FieldError)
            assert error.field.startswith("spec.parameters"), error


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def schemas(suite: list[Case]) -> list[Any]:
    return list({repr(c.schema): c.schema for c in suite if isinstance(c.schema, dict)}.values())


def test_the_error_formatter_survives_every_suite_schema_with_random_values(
    schemas: list[Any],
) -> None:
    @settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(schemas), JSON)
    def check(schema: Any, value: Any) -> None:
        for error in parameter_errors(schema, value, "parameters"):
            assert isinstance(error, FieldError)
            assert error.field.startswith("parameters"), error
            str(error)

    check()
