"""Field selectors, parsed as apimachinery's ``pkg/fields/selector.go`` parses them.

Terms are ANDed by ``,``; each is ``field=value``, ``field==value`` or ``field!=value``, where the
value escapes ``\\``, ``,`` and ``=`` with a backslash. For custom resources only
``metadata.name``, ``metadata.namespace`` and the declared selectable fields are supported; any
other label fails with ``field label not supported: <label>``, as kube-apiserver says it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runtimes.apimachinery.selectors.labels import SelectorError

# Checked in this order at every position so that "==" is not read as "=" plus "=value".
_TERM_OPERATORS = ("!=", "==", "=")


@dataclass(frozen=True)
class FieldTerm:
    field: str
    value: str
    negated: bool = False  # "!=" rather than "=" / "=="

    def matches(self, field_values: Mapping[str, str]) -> bool:
        equal = field_values.get(self.field, "") == self.value
        return not equal if self.negated else equal

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negated else '='}{escape_value(self.value)}"


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(term.field for term in self.terms)

    def matches(self, field_values: Mapping[str, str]) -> bool:
        return all(term.matches(field_values) for term in self.terms)

    def requires_exact_match(self, field: str) -> str | None:
        for term in self.terms:
            if term.field == field:
                return None if term.negated else term.value
        return None

    def requires_exact_name(self) -> str | None:
        """The name a ``metadata.name=X`` term pins, used to narrow queries and named paths."""
        return self.requires_exact_match("metadata.name")

    def __str__(self) -> str:
        return ",".join(str(term) for term in self.terms)


def escape_value(value: str) -> str:
    """EscapeValue: backslash first, then the separators."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            # Go formats the rune with %v, which prints its code point.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    if not text:
        return []
    terms: list[str] = []
    start = 0
    escaped = False
    for index, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for index in range(len(term)):
        for operator in _TERM_OPERATORS:
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
    return None


def parse_field_selector(text: str, supported: Iterable[str]) -> FieldSelector:
    """Parses a ``fieldSelector`` query value, then checks each field label is supported.

    Syntax errors in any term are reported before unsupported labels, as in kube where the
    label conversion runs only on a successfully parsed selector.
    """
    terms: list[FieldTerm] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        field, operator, raw_value = split
        terms.append(FieldTerm(field, unescape_value(raw_value), negated=operator == "!="))
    allowed = set(supported)
    for term in terms:
        if term.field not in allowed:
            raise SelectorError(f"field label not supported: {term.field}")
    return FieldSelector(tuple(terms))


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string kube compares for a selectable field: "" when absent, JSON-ish scalars."""
    current: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(current, Mapping) or part not in current:
            return ""
        current = current[part]
    if isinstance(current, bool):
        return "true" if current else "false"
    if isinstance(current, int | str):
        return str(current)
    if isinstance(current, float):
        return str(int(current)) if current.is_integer() else repr(current)
    return ""


def field_values(obj: Mapping[str, Any], fields: Iterable[str]) -> dict[str, str]:
    """Extracts every named field (dotted path, optional leading dot) as a string."""
    return {field.lstrip("."): field_value(obj, field) for field in fields}
