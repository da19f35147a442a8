"""Label and field selectors for list and watch: the one import the API and the store need.

The parsers live in ``runtimes.apimachinery.selectors.labels`` and
``runtimes.apimachinery.selectors.fields``; both raise ``SelectorError``, which the API answers with
400 BadRequest carrying the parser's message.
"""

from __future__ import annotations

from runtimes.apimachinery.selectors.fields import (
    FieldSelector,
    FieldTerm,
    escape_value,
    field_value,
    field_values,
    parse_field_selector,
    unescape_value,
)
from runtimes.apimachinery.selectors.labels import (
    LabelSelector,
    Operator,
    Requirement,
    SelectorError,
    new_requirement,
    parse_label_selector,
)

__all__ = [
    "FieldSelector",
    "FieldTerm",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
    "escape_value",
    "field_value",
    "field_values",
    "new_requirement",
    "parse_field_selector",
    "parse_label_selector",
    "unescape_value",
]
