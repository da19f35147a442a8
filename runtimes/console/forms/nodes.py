"""The render tree of a generated form: one `Node` per widget, with its value and errors.

`build` follows the same resolution as `values.read` (references, `allOf`, the `if` branch the
current value selects, the union variant the value matches), so what is drawn is what is read
back. Templates draw nodes by `kind`; nothing here produces HTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from runtimes.console.forms import keys
from runtimes.console.forms.resolve import (
    Schema,
    Unrenderable,
    effective,
    variant_for,
    variant_label,
    variants,
)
from runtimes.console.forms.values import MAX_DEPTH, MISSING, widget_kind

STRING_INPUTS = {"uri": "url", "email": "email", "date": "date"}
PLACEHOLDERS = {
    "date-time": "2026-01-31T18:00:00Z",
    "uri": "https://…",
    "email": "name@example.com",
}


@dataclass
class Option:
    value: str  # JSON text, so any enum value survives the round trip
    label: str
    selected: bool


@dataclass
class Node:
    key: str
    kind: str
    label: str
    description: str = ""
    required: bool = False
    read_only: bool = False
    deprecated: bool = False
    text: str = ""
    input_type: str = "text"
    attrs: dict[str, str] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    default: str = ""
    options: list[Option] = field(default_factory=list)
    checked: bool = False
    tristate: bool = False
    children: list[Node] = field(default_factory=list)
    toggle: bool = False
    on: bool = True
    variant_options: list[Option] = field(default_factory=list)
    chosen: int | None = None
    in_array: bool = False
    index: int = 0
    last: bool = False
    extra_text: str | None = None
    errors: list[str] = field(default_factory=list)
    focus: bool = False  # the first field of an item just added: it takes the focus

    @property
    def id(self) -> str:
        """An HTML id per key: stable across re-renders, so htmx keeps focus on it."""
        return "sf-" + re.sub(r"[^A-Za-z0-9_-]", lambda m: f"_{ord(m.group()):x}_", self.key)

    @property
    def described_by(self) -> str:
        """The ids of the help line (when drawn) and of the error line (always drawn)."""
        helps = self.description or self.constraints or self.examples or self.default
        return f"{self.id}-help err-{self.id}" if helps else f"err-{self.id}"

    @property
    def item_count(self) -> int:
        return len(self.children)


def _label(node: Schema, name: str) -> str:
    if node.get("title"):
        return str(node["title"])
    if not name:
        return "Parameters"
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return words[:1].upper() + words[1:]


def _constraints(node: Schema) -> list[str]:
    found = []
    for keyword, text in (
        ("minimum", "≥ {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "≤ {}"),
        ("exclusiveMaximum", "< {}"),
        ("multipleOf", "a multiple of {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("pattern", "matches {}"),
        ("format", "format {}"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
    ):
        if keyword in node:
            found.append(text.format(node[keyword]))
    if node.get("uniqueItems"):
        found.append("no duplicates")
    return found


def _text(value: Any) -> str:
    if value is MISSING or value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def build(
    schema: Any,
    root: Schema,
    value: Any = MISSING,
    key: str = keys.ROOT,
    depth: int = 0,
    required: bool = False,
    name: str = "",
    picks: dict[str, int] | None = None,
) -> Node:
    picks = picks if picks is not None else {}
    try:
        node = effective(schema, root, value if isinstance(value, dict) else None)
    except Unrenderable as exc:
        return _json_node(key, name, value, str(exc), required)
    kind = widget_kind(node, depth)
    out = Node(
        key=key,
        kind=kind,
        label=_label(node, name),
        description=str(node.get("description") or ""),
        required=required,
        read_only=bool(node.get("readOnly")),
        deprecated=bool(node.get("deprecated")),
        constraints=_constraints(node),
        examples=[_text(e) for e in node.get("examples") or []],
        default="" if "default" not in node else _text(node["default"]),
    )
    if depth >= MAX_DEPTH:
        out.description = (out.description + " (nested too deep for a form: edit as JSON)").strip()
    getattr(_Builders, kind)(out, node, root, value, depth, picks)
    return out


def _json_node(key: str, name: str, value: Any, why: str, required: bool) -> Node:
    text = "" if value is MISSING else json.dumps(value, indent=2)
    return Node(key, "json", _label({}, name), f"Edited as JSON ({why}).", required, text=text)


class _Builders:
    """One builder per widget kind; each fills in the node `build` started."""

    @staticmethod
    def json(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.text = "" if value is MISSING else json.dumps(value, indent=2)

    @staticmethod
    def const(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.text = json.dumps(node["const"])

    @staticmethod
    def enum(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.options = [
            Option(json.dumps(v), _text(v) or "null", value is not MISSING and v == value)
            for v in node["enum"]
        ]

    @staticmethod
    def string(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        fmt = str(node.get("format") or "")
        out.input_type = STRING_INPUTS.get(fmt, "text")
        out.text = _text(value)
        if fmt in PLACEHOLDERS:
            out.attrs["placeholder"] = PLACEHOLDERS[fmt]
        elif out.examples:
            out.attrs["placeholder"] = out.examples[0]
        for keyword, attr in (("minLength", "minlength"), ("maxLength", "maxlength")):
            if keyword in node:
                out.attrs[attr] = str(node[keyword])

    @staticmethod
    def integer(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.text = _text(value)
        out.attrs["inputmode"] = "numeric"
        if out.examples:
            out.attrs["placeholder"] = out.examples[0]

    @staticmethod
    def number(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.text = _text(value)
        out.attrs["inputmode"] = "decimal"
        if out.examples:
            out.attrs["placeholder"] = out.examples[0]

    @staticmethod
    def boolean(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        # Without a default an untouched checkbox would still say "false"; a select can say
        # "not set", so the job's manifest only carries what the user chose.
        out.tristate = "default" not in node and not out.required
        out.checked = value is True
        if out.tristate:
            out.options = [
                Option("", "not set", value is MISSING),
                Option("true", "true", value is True),
                Option("false", "false", value is False),
            ]

    @staticmethod
    def null(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.text = "null"

    @staticmethod
    def object(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        out.toggle = depth > 0 and not out.required
        out.on = value is not MISSING or not out.toggle
        if not out.on:
            return
        current = value if isinstance(value, dict) else {}
        required = set(node.get("required") or [])
        properties = node.get("properties") or {}
        for prop, sub in properties.items():
            out.children.append(
                build(
                    sub,
                    root,
                    current.get(prop, MISSING),
                    keys.child(out.key, prop),
                    depth + 1,
                    prop in required,
                    prop,
                    picks,
                )
            )
        if isinstance(node.get("additionalProperties"), dict) or "patternProperties" in node:
            extra = {k: v for k, v in current.items() if k not in properties}
            out.extra_text = json.dumps(extra, indent=2) if extra else ""

    @staticmethod
    def array(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        items = node.get("items", {})
        current = value if isinstance(value, list) else []
        try:
            item_node = effective(items, root)
        except Unrenderable:
            item_node = None
        if item_node is not None and "enum" in item_node and node.get("uniqueItems"):
            out.kind = "multi"
            out.options = [Option(json.dumps(v), _text(v), v in current) for v in item_node["enum"]]
            return
        for index, item in enumerate(current):
            key = keys.child(out.key, index)
            child = build(items, root, item, key, depth + 1, True, "", picks)
            child.label = f"{out.label} {index + 1}"
            child.in_array, child.index = True, index
            child.last = index == len(current) - 1
            out.children.append(child)

    @staticmethod
    def union(
        out: Node, node: Schema, root: Schema, value: Any, depth: int, picks: dict[str, int]
    ) -> None:
        branches = variants(node, root) or []
        if out.key in picks and picks[out.key] < len(branches):
            out.chosen = picks[out.key]
        elif value is MISSING:
            out.chosen = 0 if out.required else None
        else:
            out.chosen = variant_for(value, branches, root)
        out.variant_options = [
            Option(str(i), variant_label(b, i), i == out.chosen) for i, b in enumerate(branches)
        ]
        if out.chosen is None or not branches:
            return
        child = build(branches[out.chosen], root, value, out.key, depth + 1, True, "", picks)
        child.label = out.variant_options[out.chosen].label
        out.children.append(child)


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def mark_focus(item: Node) -> None:
    """Marks the first control drawn for `item` (just added) to take the focus: a field, a
    union's variant picker or an optional object's switch; else the item's own group."""
    for node in walk(item):
        if node.kind not in ("object", "array") or node.toggle:
            node.focus = True
            return
    item.focus = True


def attach(tree: Node, problems: dict[str, list[str]]) -> list[str]:
    """Puts each problem on the deepest node drawn for its key (or its nearest ancestor).

    Returns the problems that found no node at all (shown above the form).
    """
    by_key: dict[str, Node] = {}
    for node in walk(tree):
        by_key[node.key] = node  # deeper nodes (a union's branch) win for a shared key
    unplaced = []
    for key, messages in problems.items():
        target: str | None = key
        while target is not None and target not in by_key:
            target = keys.parent(target)
        if target is None:
            unplaced.extend(messages)
            continue
        node = by_key[target]
        prefix = "" if target == key else f"{'.'.join(keys.path_of(key))}: "
        node.errors.extend(prefix + m for m in messages if prefix + m not in node.errors)
    return unplaced
