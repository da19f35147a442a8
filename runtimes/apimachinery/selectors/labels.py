"""Label selectors, parsed and matched as apimachinery's ``pkg/labels/selector.go`` does.

The lexer, the parser and the error texts follow the Go code token by token so that a bad
``labelSelector`` reads the same as on kube-apiserver (``unable to parse requirement: ...``,
``found 'x', expected: ...``). One deliberate difference: ``key in ()`` is rejected with
"values set can't be empty" (our API contract), where apimachinery reads it as ``in ("")``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass

from runtimes.apimachinery.metadata_rules import label_value_errors, qualified_name_errors


class SelectorError(ValueError):
    """A label or field selector that cannot be parsed; the API answers 400 BadRequest."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Operator(enum.StrEnum):
    # The values are apimachinery's selection.Operator strings; they appear in error messages.
    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER_THAN = "gt"
    LESS_THAN = "lt"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Token(enum.IntEnum):
    ERROR = 0
    END_OF_STRING = 1
    CLOSED_PAR = 2
    COMMA = 3
    DOES_NOT_EXIST = 4
    DOUBLE_EQUALS = 5
    EQUALS = 6
    GREATER_THAN = 7
    IDENTIFIER = 8
    IN = 9
    LESS_THAN = 10
    NOT_EQUALS = 11
    NOT_IN = 12
    OPEN_PAR = 13


_LITERALS = {
    ")": _Token.CLOSED_PAR,
    ",": _Token.COMMA,
    "!": _Token.DOES_NOT_EXIST,
    "==": _Token.DOUBLE_EQUALS,
    "=": _Token.EQUALS,
    ">": _Token.GREATER_THAN,
    "in": _Token.IN,
    "<": _Token.LESS_THAN,
    "!=": _Token.NOT_EQUALS,
    "notin": _Token.NOT_IN,
    "(": _Token.OPEN_PAR,
}
_WHITESPACE = frozenset(" \t\r\n")
_SPECIAL = frozenset("=!(),><")
_OPERATOR_TOKENS = {
    _Token.IN: Operator.IN,
    _Token.EQUALS: Operator.EQUALS,
    _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Token.GREATER_THAN: Operator.GREATER_THAN,
    _Token.LESS_THAN: Operator.LESS_THAN,
    _Token.NOT_IN: Operator.NOT_IN,
    _Token.NOT_EQUALS: Operator.NOT_EQUALS,
}


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, ASCII digits only, in range."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _go_string_slice(values: list[str]) -> str:
    # field.Invalid renders a []string with %#v.
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.operator:
            case Operator.IN | Operator.EQUALS | Operator.DOUBLE_EQUALS:
                return present and labels[self.key] in self.values
            case Operator.NOT_IN | Operator.NOT_EQUALS:
                # kube semantics: a missing key satisfies "!=" and "notin".
                return not present or labels[self.key] not in self.values
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case Operator.GREATER_THAN | Operator.LESS_THAN:
                if not present or len(self.values) != 1:
                    return False
                have, want = parse_int64(labels[self.key]), parse_int64(self.values[0])
                if have is None or want is None:
                    return False
                return have > want if self.operator is Operator.GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        prefix = "!" if self.operator is Operator.DOES_NOT_EXIST else ""
        if self.operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            return prefix + self.key
        joined = ",".join(sorted(self.values))
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(
            self.operator, str(self.operator)
        )
        if self.operator in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {symbol} ({joined})"
        return f"{self.key}{symbol}{joined}"


@dataclass(frozen=True)
class LabelSelector:
    """Requirements ANDed together, sorted by key as apimachinery sorts them."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value the selector demands for ``key``, if it demands exactly one."""
        for r in self.requirements:
            if r.key == key:
                exact = (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                if r.operator in exact and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def new_requirement(key: str, operator: Operator, values: list[str]) -> Requirement:
    """NewRequirement: validates key, operator arity and values; errors are aggregated."""
    errors: list[str] = []
    key_errors = qualified_name_errors(key)
    if key_errors:
        errors.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(key_errors)}")
    shown = _go_string_slice(values)
    if operator in (Operator.IN, Operator.NOT_IN) and not values:
        errors.append(
            f"values: Invalid value: {shown}: "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    elif operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(values) != 1:
            errors.append(
                f"values: Invalid value: {shown}: "
                "exact-match compatibility requires one single value"
            )
    elif operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        errors.append(
            f"values: Invalid value: {shown}: "
            "values set must be empty for exists and does not exist"
        )
    elif operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        if len(values) != 1:
            errors.append(
                f"values: Invalid value: {shown}: "
                "for 'Gt', 'Lt' operators, exactly one value is required"
            )
        for index, value in enumerate(values):
            if parse_int64(value) is None:
                errors.append(
                    f"values[{index}]: Invalid value: {_go_quote(value)}: "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
    for index, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            errors.append(
                f"values[{index}][{key}]: Invalid value: {_go_quote(value)}: "
                + "; ".join(value_errors)
            )
    if errors:
        raise SelectorError(_aggregate(errors))
    return Requirement(key, operator, tuple(values))


def _aggregate(messages: list[str]) -> str:
    # utilerrors.Aggregate: one error prints bare, several are deduplicated inside brackets.
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _read(self) -> str:
        if self.pos < len(self.text):
            self.pos += 1
            return self.text[self.pos - 1]
        return ""

    def lex(self) -> tuple[_Token, str]:
        ch = self._read()
        while ch in _WHITESPACE and ch:
            ch = self._read()
        if not ch:
            return _Token.END_OF_STRING, ""
        self.pos -= 1
        return self._special() if ch in _SPECIAL else self._identifier()

    def _identifier(self) -> tuple[_Token, str]:
        start = self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in _SPECIAL or ch in _WHITESPACE:
                break
            self.pos += 1
        word = self.text[start : self.pos]
        return _LITERALS.get(word, _Token.IDENTIFIER), word

    def _special(self) -> tuple[_Token, str]:
        # Longest run of special symbols that still spells a token ("!=" before "!").
        best: tuple[_Token, str] | None = None
        buffer = ""
        while self.pos < len(self.text) and self.text[self.pos] in _SPECIAL:
            buffer += self.text[self.pos]
            self.pos += 1
            token = _LITERALS.get(buffer)
            if token is not None:
                best = (token, buffer)
            elif best is not None:
                self.pos -= 1
                break
        if best is None:
            return _Token.ERROR, f"error expected: keyword found '{buffer}'"
        return best


class _Parser:
    """The left-recursive descent of apimachinery's Parser, over pre-scanned tokens."""

    def __init__(self, text: str) -> None:
        lexer = _Lexer(text)
        self.items: list[tuple[_Token, str]] = []
        while True:
            item = lexer.lex()
            self.items.append(item)
            if item[0] is _Token.END_OF_STRING:
                break
        self.position = 0

    def _peek(self, values: bool = True) -> tuple[_Token, str]:
        return self._as_context(self.items[self.position], values)

    def _take(self, values: bool = True) -> tuple[_Token, str]:
        self.position += 1
        return self._as_context(self.items[self.position - 1], values)

    @staticmethod
    def _as_context(item: tuple[_Token, str], values: bool) -> tuple[_Token, str]:
        # In a value position "in" and "notin" are ordinary identifiers ("x in (in)").
        if values and item[0] in (_Token.IN, _Token.NOT_IN):
            return _Token.IDENTIFIER, item[1]
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self._peek()
            if token in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                try:
                    requirements.append(self._requirement())
                except SelectorError as error:
                    raise SelectorError(f"unable to parse requirement: {error.message}") from None
                token, literal = self._take()
                if token is _Token.END_OF_STRING:
                    return requirements
                if token is _Token.COMMA:
                    next_token, next_literal = self._peek()
                    if next_token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                        raise SelectorError(
                            f"found '{next_literal}', expected: identifier after ','"
                        )
                    continue
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            if token is _Token.END_OF_STRING:
                return requirements
            raise SelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        key, operator = self._key_and_inferred_operator()
        if operator is not None:
            return new_requirement(key, operator, [])
        operator = self._operator()
        if operator in (Operator.IN, Operator.NOT_IN):
            values = self._value_set()
        else:
            values = self._exact_value()
        return new_requirement(key, operator, sorted(values))

    def _key_and_inferred_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        token, literal = self._take()
        if token is _Token.DOES_NOT_EXIST:
            operator = Operator.DOES_NOT_EXIST
            token, literal = self._take()
        if token is not _Token.IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        key_errors = qualified_name_errors(literal)
        if key_errors:
            # The parser validates with a nil field path, which Go prints as "<nil>".
            raise SelectorError(
                f"<nil>: Invalid value: {_go_quote(literal)}: {'; '.join(key_errors)}"
            )
        if operator is None and self._peek()[0] in (_Token.END_OF_STRING, _Token.COMMA):
            operator = Operator.EXISTS
        return literal, operator

    def _operator(self) -> Operator:
        token, literal = self._take(values=False)
        operator = _OPERATOR_TOKENS.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        return operator

    def _value_set(self) -> set[str]:
        token, literal = self._take()
        if token is not _Token.OPEN_PAR:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self._peek()
        if token in (_Token.IDENTIFIER, _Token.COMMA):
            values = self._identifiers()
            if self._take()[0] is not _Token.CLOSED_PAR:
                raise SelectorError(f"found '{literal}', expected: ')'")
            return values
        if token is _Token.CLOSED_PAR:
            self._take()
            # apimachinery turns "()" into {""}; our contract rejects it in new_requirement.
            return set()
        raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")

    def _identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            token, literal = self._take()
            if token is _Token.IDENTIFIER:
                values.add(literal)
                next_token, next_literal = self._peek()
                if next_token is _Token.COMMA:
                    continue
                if next_token is _Token.CLOSED_PAR:
                    return values
                raise SelectorError(f"found '{next_literal}', expected: ',' or ')'")
            if token is _Token.COMMA:
                # Empty values between commas ("(,a)", "(a,)", "(a,,b)") are the empty string.
                if not values:
                    values.add("")
                next_token = self._peek()[0]
                if next_token is _Token.CLOSED_PAR:
                    values.add("")
                    return values
                if next_token is _Token.COMMA:
                    self._take()
                    values.add("")
                continue
            raise SelectorError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_Token.END_OF_STRING, _Token.COMMA):
            return {""}
        token, literal = self._take()
        if token is _Token.IDENTIFIER:
            return {literal}
        raise SelectorError(f"found '{literal}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parses a ``labelSelector`` query value; an empty string selects everything."""
    requirements = _Parser(text).parse()
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))
