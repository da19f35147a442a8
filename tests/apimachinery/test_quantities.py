"""Kubernetes quantities and Go durations."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtimes.apimachinery.quantities import (
    format_seconds,
    is_quantity,
    parse_duration,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        ("500m", Decimal("0.5")),
        ("64Gi", Decimal(64 * 2**30)),
        ("1.5", Decimal("1.5")),
        ("2e3", Decimal(2000)),
        ("1E3", Decimal(1000)),
        ("1e-3", Decimal("0.001")),
        ("1k", Decimal(1000)),
        ("10M", Decimal(10_000_000)),
        ("1E", Decimal(10**18)),
        ("100n", Decimal("0.0000001")),
        ("3u", Decimal("0.000003")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+2Ki", Decimal(2048)),
        ("-1", Decimal(-1)),
        ("0.5Gi", Decimal(2**29)),
    ],
)
def test_it_parses_kubernetes_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 8",
        "8 ",
        "1K",
        "1KI",
        "1kb",
        "64GB",
        "1.5.5",
        "1e1.5",
        "e3",
        "Gi",
        ".",
        "1 Gi",
        "0x10",
        "1Gib",
        "--1",
        "1µ",
    ],
)
def test_it_rejects_what_apimachinery_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)
    assert not is_quantity(text)


def test_it_takes_json_numbers_as_quantities_but_not_booleans() -> None:
    assert parse_quantity(8) == 8
    assert parse_quantity(0.5) == Decimal("0.5")
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(True)
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(float("inf"))


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["Ki", "Mi", "Gi", "Ti"]))
def test_it_multiplies_binary_suffixes_exactly(amount: int, suffix: str) -> None:
    power = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[suffix]
    assert parse_quantity(f"{amount}{suffix}") == amount * 2**power


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", Decimal(90)),
        ("5m", Decimal(300)),
        ("1h30m", Decimal(5400)),
        ("1.5h", Decimal(5400)),
        ("300ms", Decimal("0.3")),
        ("1us", Decimal("0.000001")),
        ("1\u00b5s", Decimal("0.000001")),
        ("1\u03bcs", Decimal("0.000001")),
        ("2h45m30.5s", Decimal("9930.5")),
        ("0", Decimal(0)),
        ("-5m", Decimal(-300)),
        (".5s", Decimal("0.5")),
        ("1.s", Decimal(1)),
    ],
)
def test_it_parses_go_durations(text: str, seconds: Decimal) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "1x", "h", "1 h", "1h 30m", "1d", ".s", "1hh", "+", "-"])
def test_it_rejects_what_time_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_it_refuses_durations_beyond_int64_nanoseconds() -> None:
    assert parse_duration("2562047h") > 0
    with pytest.raises(ValueError, match="292 years"):
        parse_duration("2562048h")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1800, "30m"), (90, "1m30s"), (3600, "1h"), (0, "0s"), (Decimal("0.3"), "0.3s")],
)
def test_it_formats_seconds_the_short_way(seconds: Decimal | int, text: str) -> None:
    assert format_seconds(seconds) == text
    assert parse_duration(text) == Decimal(str(seconds))
