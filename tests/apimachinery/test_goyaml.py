"""go-yaml v2's scalar rules (the resolver kube-apiserver's YAML decoder uses), case by case."""

from __future__ import annotations

import math

import pytest

from runtimes.apimachinery import goyaml


@pytest.mark.parametrize(
    ("text", "tag", "value"),
    [
        # The fixed table: YAML 1.1 booleans including the one-letter ones, nulls, specials.
        ("y", "bool", True),
        ("Y", "bool", True),
        ("YES", "bool", True),
        ("on", "bool", True),
        ("n", "bool", False),
        ("Off", "bool", False),
        ("FALSE", "bool", False),
        ("", "null", None),
        ("~", "null", None),
        ("Null", "null", None),
        (".inf", "float", math.inf),
        ("-.Inf", "float", -math.inf),
        ("<<", "merge", "<<"),
        # Mixed case outside the table is a string.
        ("yES", "str", "yES"),
        ("nULL", "str", "nULL"),
        # Integers: Go's ParseInt with base prefixes, underscores dropped first.
        ("0", "int", 0),
        ("-17", "int", -17),
        ("+5", "int", 5),
        ("1_000", "int", 1000),
        ("017", "int", 15),
        ("0o17", "int", 15),
        ("0x1F", "int", 31),
        ("-0x1f", "int", -31),
        ("0b101", "int", 5),
        ("-0b11", "int", -3),
        ("9223372036854775807", "int", 2**63 - 1),
        ("18446744073709551615", "int", 2**64 - 1),  # ParseUint
        # Floats: go-yaml's float syntax, exponent without a point included.
        ("1e3", "float", 1000.0),
        ("0962e2", "float", 96200.0),
        ("09", "float", 9.0),  # not octal, so the float syntax reads it
        ("1.", "float", 1.0),
        (".5", "float", 0.5),
        ("+.5", "float", 0.5),
        ("-1.5E-3", "float", -0.0015),
        ("18446744073709551616", "float", 2.0**64),
        ("-9223372036854775809", "float", -(2.0**63)),
        ("1e-400", "float", 0.0),  # underflow is zero in Go, no error
        # Strings: what fits none of the rules, including YAML 1.1 forms go-yaml dropped.
        ("12:30", "str", "12:30"),  # sexagesimal
        ("=", "str", "="),
        ("1e400", "str", "1e400"),  # out of range: ParseFloat fails, so a string
        ("1e", "str", "1e"),
        ("0x", "str", "0x"),
        ("0x1p-2", "str", "0x1p-2"),
        ("._5", "str", "._5"),
        (".", "str", "."),
        ("-", "str", "-"),
        ("1,000", "str", "1,000"),
        ("2024-01-02", "str", "2024-01-02"),  # a timestamp keeps its text
        ("x1", "str", "x1"),
        ("1" * 5000, "str", "1" * 5000),  # too large for any number
    ],
)
def test_plain_scalars_resolve_as_go_yaml_reads_them(text: str, tag: str, value: object) -> None:
    assert goyaml.resolve(text) == (tag, value)


def test_an_explicit_tag_must_agree_except_int_as_float() -> None:
    assert goyaml.resolve("12", "int") == ("int", 12)
    assert goyaml.resolve("12", "str") == ("str", "12")
    assert goyaml.resolve("y", "bool") == ("bool", True)
    assert goyaml.resolve("1", "float") == ("float", 1.0)
    assert goyaml.resolve("2001-12-14", "timestamp") == ("timestamp", "2001-12-14")
    with pytest.raises(goyaml.ResolveError, match=r"cannot decode !!str `abc` as a !!int"):
        goyaml.resolve("abc", "int")
    with pytest.raises(goyaml.ResolveError, match=r"cannot decode !!float `1.5` as a !!int"):
        goyaml.resolve("1.5", "int")


def test_nan_is_a_float() -> None:
    tag, value = goyaml.resolve(".NaN")
    assert tag == "float"
    assert math.isnan(value)


@pytest.mark.parametrize(
    ("value", "bits", "text"),
    [
        (1000.0, 64, "1000"),
        (123456.0, 64, "123456"),
        (1e6, 64, "1e+06"),
        (1.5, 64, "1.5"),
        (0.0001, 64, "0.0001"),
        (0.00001, 64, "1e-05"),
        (-2.5e-7, 64, "-2.5e-07"),
        (0.1, 32, "0.1"),
        (16777217.0, 32, "1.6777216e+07"),  # float32 has no 16777217
        (3.4028234663852886e38, 32, "3.4028235e+38"),  # the largest float32
        (1e100, 32, "+Inf"),  # past float32's range: Go's float32(1e100) is +Inf
        (-1e39, 32, "-Inf"),
    ],
)
def test_floats_format_as_go_g_shortest(value: float, bits: int, text: str) -> None:
    assert goyaml.format_g(value, bits) == text


def test_keys_are_named_as_go_prints_them() -> None:
    assert goyaml.go_value("kind") == '"kind"'
    assert goyaml.go_value(True) == "true"
    assert goyaml.go_value(7) == "7"
    assert goyaml.go_value(2**64 - 1) == "0xffffffffffffffff"
    assert goyaml.go_value(None) == "<nil>"
