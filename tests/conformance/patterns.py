"""Patterns for conformance sequences: what an answer must look like.

A dict matches a dict holding at least its keys (`ABSENT` says a key must not be there), a list
matches a list of the same length item by item, a `Matcher` decides for itself, anything else
must be equal. Strings may name saved values as `{name}`; a string that is only `{name}`
becomes the saved value itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class Matcher:
    """A pattern that decides by itself; `check` says what is wrong, or None."""

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        raise NotImplementedError


class _Absent(Matcher):
    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        return None  # handled by the dict walk: reaching here means the key is absent

    def __repr__(self) -> str:
        return "ABSENT"


class _Any(Matcher):
    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        return None

    def __repr__(self) -> str:
        return "ANY"


ABSENT: Any = _Absent()
ANY: Any = _Any()


@dataclass(frozen=True)
class Re(Matcher):
    """A string matching the regular expression (fully)."""

    pattern: str

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        pattern = _NAME.sub(
            lambda m: re.escape(str(saved[m.group(1)])) if m.group(1) in saved else m.group(0),
            self.pattern,
        )
        if isinstance(actual, str) and re.fullmatch(pattern, actual):
            return None
        return f"{actual!r} does not match /{pattern}/"


@dataclass(frozen=True)
class Contains(Matcher):
    """A string holding each of the substrings, or a list holding each of the items' patterns."""

    parts: tuple[Any, ...]

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        for part in self.parts:
            part = substitute(part, saved)
            if isinstance(actual, str):
                if part not in actual:
                    return f"{actual!r} does not contain {part!r}"
            elif isinstance(actual, list):
                if not any(matches(item, part, saved) is None for item in actual):
                    return f"no item of {actual!r} matches {part!r}"
            else:
                return f"{actual!r} is neither a string nor a list"
        return None


def contains(*parts: Any) -> Any:
    return Contains(parts)


@dataclass(frozen=True)
class Exactly(Matcher):
    """Equal as a whole (a dict with no other keys)."""

    value: Any

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        expected = substitute(self.value, saved)
        return None if actual == expected else f"{actual!r} != {expected!r}"


@dataclass(frozen=True)
class Compare(Matcher):
    """An integer (or integer string) compared with a saved one: `later("rv")`, `same("rv")`."""

    name: str
    relation: str  # ">", "==", "!="

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        try:
            a, b = int(actual), int(saved[self.name])
        except (TypeError, ValueError, KeyError):
            return f"{actual!r} cannot be compared with {self.name}={saved.get(self.name)!r}"
        ok = {">": a > b, "==": a == b, "!=": a != b}[self.relation]
        return None if ok else f"{actual!r} is not {self.relation} {self.name}={b}"


def later(name: str) -> Any:
    return Compare(name, ">")


def same(name: str) -> Any:
    return Compare(name, "==")


def other(name: str) -> Any:
    return Compare(name, "!=")


@dataclass(frozen=True)
class AllOf(Matcher):
    """Every one of the patterns."""

    patterns: tuple[Any, ...]

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        for pattern in self.patterns:
            problem = matches(actual, pattern, saved)
            if problem:
                return problem
        return None


def all_of(*patterns: Any) -> Any:
    return AllOf(patterns)


@dataclass(frozen=True)
class Item(Matcher):
    """A list whose item at `index` matches `pattern` (other items are not checked)."""

    index: int
    pattern: Any

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        if not isinstance(actual, list) or len(actual) <= self.index:
            return f"{actual!r} has no item {self.index}"
        return matches(actual[self.index], self.pattern, saved, f"[{self.index}]")


@dataclass(frozen=True)
class Length(Matcher):
    count: int

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        if isinstance(actual, list | dict | str) and len(actual) == self.count:
            return None
        return f"{actual!r} does not have length {self.count}"


RV: Any = Re(r"[1-9][0-9]*")
UID: Any = Re(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME: Any = Re(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def matches(actual: Any, expected: Any, saved: Mapping[str, Any], at: str = "") -> str | None:
    """None when `actual` fits the pattern `expected`, else where and why it does not."""
    if isinstance(expected, Matcher):
        problem = expected.check(actual, saved)
        return f"{at or '.'}: {problem}" if problem else None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{at or '.'}: expected an object, got {actual!r}"
        for key, want in expected.items():
            if want is ABSENT:
                if key in actual:
                    return f"{at}.{key}: expected absent, got {actual[key]!r}"
                continue
            if key not in actual:
                return f"{at}.{key}: missing (have {sorted(actual)})"
            problem = matches(actual[key], want, saved, f"{at}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{at or '.'}: expected {len(expected)} items, got {actual!r}"
        for index, (item, want) in enumerate(zip(actual, expected, strict=True)):
            problem = matches(item, want, saved, f"{at}[{index}]")
            if problem:
                return problem
        return None
    expected = substitute(expected, saved)
    return None if actual == expected else f"{at or '.'}: {actual!r} != {expected!r}"


_NAME = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def substitute(value: Any, saved: Mapping[str, Any]) -> Any:
    """`value` with `{name}` replaced by saved values (recursively through dicts and lists)."""
    if isinstance(value, str):
        whole = _NAME.fullmatch(value)
        if whole and whole.group(1) in saved:
            return saved[whole.group(1)]
        return _NAME.sub(
            lambda m: str(saved[m.group(1)]) if m.group(1) in saved else m.group(0), value
        )
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    return value


def pick(document: Any, path: str) -> Any:
    """`document` at a dotted path; list items by index (`items.0.metadata.name`)."""
    for part in path.split("."):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document
