"""Kubernetes quantities and Go durations, parsed exactly as the Go code does.

Quantities follow apimachinery's ``resource.Quantity`` grammar (``8``, ``500m``, ``64Gi``,
``2e3``); durations follow Go's ``time.ParseDuration`` (``90s``, ``1h30m``, ``1.5h``).
Both raise `ValueError` with a message a person can act on; callers turn that into a
`FieldError`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# Suffix multipliers from apimachinery's ``suffix.go``: binary SI, decimal SI, and "e<int>".
_BINARY_SI: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SI: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}

# The grammar of resource.ParseQuantity. The exponent of "e"/"E" is a signed integer: Go's
# suffix parser stops at a '.', so "1e1.5" is rejected even though the CRD regex allows it.
QUANTITY_PATTERN = (
    r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_QUANTITY = re.compile(
    r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)

QUANTITY_HINT = "must be a Kubernetes quantity such as '8', '500m', '64Gi' or '1.5'"


def parse_quantity(value: str | int | float) -> Decimal:
    """Returns the quantity's exact value; JSON numbers are taken as their decimal text."""
    if isinstance(value, bool):
        raise ValueError(QUANTITY_HINT)
    if isinstance(value, int | float):
        text = repr(value) if isinstance(value, float) else str(value)
    elif isinstance(value, str):
        text = value
    else:
        raise ValueError(QUANTITY_HINT)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(QUANTITY_HINT)
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    try:
        amount = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex admits only decimals
        raise ValueError(QUANTITY_HINT) from error
    if suffix in _BINARY_SI:
        amount *= _BINARY_SI[suffix]
    elif suffix in _DECIMAL_SI:
        amount = amount.scaleb(_DECIMAL_SI[suffix])
    else:
        exponent = int(suffix[1:])
        # Go rejects exponents that overflow its int64 scale arithmetic; a bound keeps Decimal
        # from building absurd numbers out of "1e999999999".
        if abs(exponent) > 1000:
            raise ValueError("the exponent is out of range")
        amount = amount.scaleb(exponent)
    return -amount if sign == "-" else amount


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


# Go's time.ParseDuration units, in nanoseconds (both micro signs are accepted).
_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,
    "\u03bcs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
DURATION_PATTERN = r"^[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$|^[+-]?0$"
_COMPONENT = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_MAX_NANOSECONDS = 2**63 - 1

DURATION_HINT = "must be a duration such as '90s', '5m', '1h30m' or '1.5h'"


def parse_duration(value: str) -> Decimal:
    """Returns the duration in seconds; rejects what Go's time.ParseDuration rejects."""
    if not isinstance(value, str) or not value:
        raise ValueError(DURATION_HINT)
    text = value
    negative = text[0] == "-"
    if text[0] in "+-":
        text = text[1:]
    if text == "0":
        return Decimal(0)
    if not text:
        raise ValueError(DURATION_HINT)
    nanoseconds = Decimal(0)
    position = 0
    while position < len(text):
        match = _COMPONENT.match(text, position)
        if match is None:
            raise ValueError(DURATION_HINT)
        nanoseconds += Decimal(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    # Go truncates fractions below a nanosecond and refuses anything past int64 nanoseconds.
    nanoseconds = Decimal(int(nanoseconds))
    if nanoseconds > _MAX_NANOSECONDS:
        raise ValueError("the duration is longer than Go can represent (about 292 years)")
    seconds = nanoseconds.scaleb(-9)
    return -seconds if negative else seconds


def format_seconds(seconds: Decimal | float) -> str:
    """Renders seconds the short way a person writes them: 1800 -> '30m', 90 -> '1m30s'."""
    remaining = Decimal(str(seconds))
    parts: list[str] = []
    for unit, size in (("h", 3600), ("m", 60)):
        whole = int(remaining // size)
        if whole:
            parts.append(f"{whole}{unit}")
            remaining -= whole * size
    if remaining or not parts:
        parts.append(f"{remaining.normalize():f}s")
    return "".join(parts)
