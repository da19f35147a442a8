"""How kube-apiserver's YAML decoder reads a scalar: go-yaml v2's rules, written out here.

kube-apiserver (and kubectl) turn YAML into JSON with sigs.k8s.io/yaml, which reads it with
go-yaml v2. Its plain scalars are YAML 1.1-ish but follow their own table, which PyYAML's
YAML 1.1 resolver does not match: ``y``/``n`` are booleans, ``1e3`` and ``0962e2`` are floats,
``0o17`` is an integer, while ``12:30`` (sexagesimal) and ``=`` stay strings. `resolve` gives
the tag and value go-yaml gives; `yamlcodec` resolves request bodies with it.

A plain scalar is looked up by its first character.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

# - in the fixed table (``~``, ``null``, ``y``, ``yes``, ``on``, ``.inf``, ``<<`` …) → that value;
# - starting with ``.`` → a float when the whole text is one (``.5``, ``.5e3``);
# - starting with a digit or a sign → an integer (Go's ``ParseInt`` with base prefixes ``0x``,
#   ``0o``, ``0b`` and a leading ``0`` for octal; underscores are dropped first), an unsigned
#   64-bit integer, or a float (``[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?``);
# - anything else, or anything that fits none of these, is a string.
#
# An explicit tag (``!!int "12"``) resolves the text the same way and must agree with the tag,
# except that an integer may be read as a float; otherwise go-yaml's error is raised.
# Timestamps are left as their text (go-yaml gives ``interface{}`` targets the string too).
# Every check is a linear scan; no regular expression runs on the input.

STR, BOOL, INT, FLOAT, NULL = "str", "bool", "int", "float", "null"
MERGE, TIMESTAMP = "merge", "timestamp"

_TABLE: dict[str, tuple[str, Any]] = {}
for _value, _tag, _texts in (
    (True, BOOL, ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")),
    (False, BOOL, ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")),
    (None, NULL, ("", "~", "null", "Null", "NULL")),
    (math.nan, FLOAT, (".nan", ".NaN", ".NAN")),
    (math.inf, FLOAT, (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")),
    (-math.inf, FLOAT, ("-.inf", "-.Inf", "-.INF")),
    ("<<", MERGE, ("<<",)),
):
    for _text in _texts:
        _TABLE[_text] = (_tag, _value)

_DIGITS = "0123456789"
_TABLE_FIRST = set("yYnNtTfFoO~")
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1
_FLOAT_MAX = 1.7976931348623157e308


class ResolveError(ValueError):
    """The text cannot be read as its explicit tag says (go-yaml's words)."""


def resolve(text: str, tag: str = "") -> tuple[str, Any]:
    """go-yaml v2's tag and value for a scalar: ``tag`` is "" for a plain scalar without
    one, or the explicit short tag (``int``, ``str`` …)."""
    if tag not in ("", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP):
        return tag, text
    found = (STR, text) if tag == STR else _plain(text)
    if tag in ("", found[0]):
        return found
    if tag == FLOAT and found[0] == INT:
        return FLOAT, float(found[1])
    if tag == TIMESTAMP and found[0] == STR:
        return TIMESTAMP, text  # go-yaml parses it; an interface{} gets the text either way
    raise ResolveError(f"cannot decode !!{found[0]} `{text}` as a !!{tag}")


def _plain(text: str) -> tuple[str, Any]:
    if text in _TABLE:
        return _TABLE[text]
    first = text[0]
    if first == ".":
        value = parse_float(text)
        if value is not None:
            return FLOAT, value
    elif first in _DIGITS or first in "+-":
        plain = text.replace("_", "")
        number = parse_int(plain)
        if number is not None and _INT64[0] <= number <= _INT64[1]:
            return INT, number
        if number is not None and 0 <= number <= _UINT64_MAX and plain[0] != "+":
            return INT, number  # ParseUint: no sign at all
        if is_yaml_float(plain):
            value = parse_float(plain)
            if value is not None:
                return FLOAT, value
        # go-yaml's own 0b branches add nothing: ParseInt above reads the prefix already.
    return STR, text


def parse_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 0, …)`` syntax (range is the caller's): an optional sign,
    then ``0x``/``0o``/``0b`` or a leading ``0`` (octal) or decimal digits."""
    body = text[1:] if text[:1] in ("+", "-") else text
    negative = text[:1] == "-"
    base, digits = 10, body
    if len(body) > 1 and body[0] == "0":
        prefix = body[1].lower()
        base, digits = {"x": 16, "o": 8, "b": 2}.get(prefix, 8), body[2:]
        if prefix not in "xob":
            digits = body[1:]
    allowed = "0123456789abcdefABCDEF"[: base if base <= 10 else base + 6]
    if not digits or digits.lstrip(allowed):  # a character outside the base's digits
        return None
    if len(digits.lstrip("0")) > 64:  # past 64 bits in any base: out of Go's range anyway
        return None
    value = int(digits, base)
    return -value if negative else value


def is_yaml_float(text: str) -> bool:
    """go-yaml's ``^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$``, with string
    methods (linear, in C: a body may hold a scalar of megabytes)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    marks = [i for i in (body.find("e"), body.find("E")) if i >= 0]
    mantissa, exponent = (body[: min(marks)], body[min(marks) + 1 :]) if marks else (body, None)
    if exponent is not None:
        exponent = exponent[1:] if exponent[:1] in ("+", "-") else exponent
        if not exponent or not _digits(exponent):
            return False
    whole, dot, fraction = mantissa.partition(".")
    if not (_digits(whole) and _digits(fraction)):
        return False
    return bool(whole or (dot and fraction))


def _digits(text: str) -> bool:
    """Only ASCII digits (or nothing)."""
    return not text or (text.isascii() and text.isdigit())


def parse_float(text: str) -> float | None:
    """Go's ``strconv.ParseFloat(text, 64)`` for decimal text: None when it does not parse or
    overflows (Go's ErrRange; an underflow is 0, as in Go)."""
    if not is_yaml_float(text):
        return None
    value = float(text)
    return value if abs(value) <= _FLOAT_MAX else None


# Half an ulp past the largest finite float32: from here on Go's float32(value) is infinite.
_FLOAT32_MAX = 3.4028235677973366e38


def format_g(value: float, bits: int = 64) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, bits)`` (and ``%v``): the shortest digits that
    read back as the same float, in exponent form below 1e-4 and from 1e6 on."""
    if bits == 32 and abs(value) >= _FLOAT32_MAX:
        value = math.copysign(math.inf, value)  # Go's float32(value) of a larger number
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    if bits == 32:
        single = struct.unpack("f", struct.pack("f", value))[0]
        text = next(
            candidate
            for candidate in (f"{single:.{p}e}" for p in range(17))
            if struct.unpack("f", struct.pack("f", float(candidate)))[0] == single
        )
    else:
        text = repr(value)
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    shown = "".join(map(str, digits))
    point = len(shown) + int(exponent)  # where the decimal point goes
    minus = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= 6:  # Go: "if precision was the shortest possible, use 6"
        mantissa = shown[0] + ("." + shown[1:] if len(shown) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{shown}"
    if point >= len(shown):
        return f"{minus}{shown}{'0' * (point - len(shown))}"
    return f"{minus}{shown[:point]}.{shown[point:]}"


def go_value(value: Any) -> str:
    """``%#v`` of a decoded YAML key, as go-yaml names a repeated one."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, int):
        return hex(value) if value > _INT64[1] else str(value)
    if isinstance(value, float):
        return format_g(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
