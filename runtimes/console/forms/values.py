"""Values in and out of a generated form: prefill, reading a submission, changes, array edits.

`read` walks the schema the same way `nodes.build` draws it, so every widget's name is read
back by the rule that wrote it. Text that cannot become the field's type (``abc`` for an
integer) is reported at the field as a problem and left out of the value; everything else is
left to jsonschema, which is the authority.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from runtimes.apimachinery import bounds, jsoncodec
from runtimes.console.forms import keys
from runtimes.console.forms.resolve import (
    Schema,
    Unrenderable,
    effective,
    kind_of,
    variant_for,
    variants,
)

MAX_DEPTH = 8  # deeper (recursive) schemas fall back to a JSON textarea
# Items one array of a form may have: a form posts at most 1,000 fields (Django's
# DATA_UPLOAD_MAX_NUMBER_FIELDS), and a posted `$len` must not make the server build more.
MAX_ITEMS = 1000


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class FormData(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...
    def getlist(self, key: str) -> list[str]: ...
    def __contains__(self, key: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...


def widget_kind(node: Schema, depth: int) -> str:
    """The widget a node gets; both drawing and reading ask here, so they always agree."""
    if depth >= MAX_DEPTH:
        return "json"
    kind = kind_of(node)
    if kind == "object" and not node.get("properties"):
        return "json"  # free-form objects (maps) are edited as JSON
    if kind == "array" and "prefixItems" in node:
        return "json"
    return kind


def drawn(data: FormData, key: str) -> bool:
    """Whether the submitted form had any widget for `key` (a field an `if` just added had not)."""
    prefix = key + "."
    return any(name == key or name.startswith(prefix) for name in data)


def prefill(schema: Any, root: Schema, depth: int = 0, force: bool = False) -> Any:
    """What a fresh form shows: the node's default, else its children's defaults.

    An optional object without a default is left out unless every property it requires has a
    default (so a fresh form never starts invalid); `force` includes it anyway (the user just
    switched it on).
    """
    try:
        node = effective(schema, root)
    except Unrenderable:
        return MISSING
    if node.get("readOnly"):
        return MISSING  # the server's to set: a form never sends it
    if "default" in node:
        return copy.deepcopy(node["default"])
    if "const" in node:
        return node["const"]
    kind = widget_kind(node, depth)
    if kind == "union":
        branches = variants(node, root) or []
        if force and branches:
            return prefill(branches[0], root, depth + 1, force=True)
        return MISSING
    if kind != "object":
        return MISSING
    value: dict[str, Any] = {}
    for name, sub in (node.get("properties") or {}).items():
        required = name in (node.get("required") or [])
        inner = prefill(sub, root, depth + 1, force=required)
        if inner is not MISSING:
            value[name] = inner
    missing_required = [n for n in node.get("required") or [] if n not in value]
    if missing_required and not force:
        return MISSING
    return value if (value or force) else MISSING


def _scalar(kind: str, raw: str, key: str, problems: dict[str, list[str]]) -> Any:
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            try:
                number = float(raw)
            except ValueError:
                number = None
            if number is not None and number.is_integer():
                return int(number)
            problems.setdefault(key, []).append(f"Enter a whole number ({raw!r} is not one)")
            return MISSING
    if kind == "number":
        try:
            return int(raw)
        except ValueError:
            try:
                return float(raw)
            except ValueError:
                problems.setdefault(key, []).append(f"Enter a number ({raw!r} is not one)")
                return MISSING
    return raw


def read(
    schema: Any,
    root: Schema,
    data: FormData,
    key: str = keys.ROOT,
    problems: dict[str, list[str]] | None = None,
    depth: int = 0,
    in_array: bool = False,
    picks: dict[str, int] | None = None,
) -> Any:
    """The JSON value the submitted form describes under `key` (MISSING when left unset).

    `picks` collects the variant chosen for each union, which the value alone may not tell
    (an empty string form of an integer-or-string union).
    """
    problems = problems if problems is not None else {}
    picks = picks if picks is not None else {}
    try:
        node = effective(schema, root)
    except Unrenderable:
        return _read_json(data, key, problems)
    kind = widget_kind(node, depth)
    if node.get("readOnly"):
        return MISSING
    if kind == "json":
        return _read_json(data, key, problems)
    if kind == "const":
        return node["const"] if f"{key}.$const" in data or depth == 0 or in_array else MISSING
    if kind == "enum":
        raw = data.get(key)
        if raw in (None, ""):
            return MISSING
        try:
            return jsoncodec.loads(raw.encode())
        except ValueError:
            return raw
    if kind == "boolean":
        if f"{key}.$bool" in data:  # a checkbox: absent means false
            return key in data
        raw = data.get(key)
        return {"true": True, "false": False}.get(raw or "", MISSING)
    if kind == "null":
        return None if f"{key}.$null" in data else MISSING
    if kind in ("string", "integer", "number"):
        raw = data.get(key)
        if raw is None or (raw == "" and not in_array):
            return MISSING
        if raw == "":
            return "" if kind == "string" else None
        return _scalar(kind, raw, key, problems)
    if kind == "union":
        return _read_union(node, root, data, key, problems, depth, picks)
    if kind == "array":
        return _read_array(node, root, data, key, problems, depth, picks)
    return _read_object(schema, root, data, key, problems, depth, picks)


def _read_json(data: FormData, key: str, problems: dict[str, list[str]]) -> Any:
    text = data.get(f"{key}.$json")
    if text is None or not text.strip():
        return MISSING
    try:
        return jsoncodec.loads(text.encode(), "the value")
    except bounds.BoundExceeded as exc:
        problems.setdefault(key, []).append(exc.message)
        return MISSING
    except ValueError as exc:  # jsoncodec.JSONError, or text that is not Unicode
        problems.setdefault(key, []).append(f"This is not valid JSON: {exc}")
        return MISSING


def _read_union(
    node: Schema,
    root: Schema,
    data: FormData,
    key: str,
    problems: dict[str, list[str]],
    depth: int,
    picks: dict[str, int],
) -> Any:
    branches = variants(node, root) or []
    index = keys.index(str(data.get(f"{key}.$variant") or ""))
    if index is None or index >= len(branches):
        return MISSING
    picks[key] = index
    if data.get(f"{key}.$shown") != str(index):
        # The picker just changed: start the new form from its defaults.
        return prefill(branches[index], root, depth + 1, force=True)
    return read(branches[index], root, data, key, problems, depth + 1, True, picks)


def _read_array(
    node: Schema,
    root: Schema,
    data: FormData,
    key: str,
    problems: dict[str, list[str]],
    depth: int,
    picks: dict[str, int],
) -> Any:
    items = node.get("items", {})
    if f"{key}.$multi" in data:  # unique enum items drawn as checkboxes
        chosen = []
        for raw in data.getlist(key):
            try:
                chosen.append(jsoncodec.loads(raw.encode()))
            except ValueError:
                chosen.append(raw)
        return chosen
    length = keys.index(str(data.get(f"{key}.$len") or ""))
    if length is None:
        return MISSING
    if length > MAX_ITEMS:
        problems.setdefault(key, []).append(f"A form takes at most {MAX_ITEMS} items")
        return MISSING
    value = []
    for index in range(length):
        child = keys.child(key, index)
        item = read(items, root, data, child, problems, depth + 1, True, picks)
        value.append(None if item is MISSING else item)
    return value


def _read_object(
    schema: Any,
    root: Schema,
    data: FormData,
    key: str,
    problems: dict[str, list[str]],
    depth: int,
    picks: dict[str, int],
) -> Any:
    if f"{key}.$toggle" in data and f"{key}.$on" not in data:
        return MISSING
    if f"{key}.$toggle" in data and f"{key}.$was" not in data:
        return prefill(schema, root, depth, force=True)  # just switched on
    value: dict[str, Any] = {}
    # Two passes: the properties an `if` adds depend on the values of the others.
    for _ in range(2):
        node = effective(schema, root, value if value else None)
        found: dict[str, Any] = {}
        scratch: dict[str, list[str]] = {}
        for name, sub in (node.get("properties") or {}).items():
            if not drawn(data, keys.child(key, name)):
                fresh = prefill(sub, root, depth + 1, force=name in (node.get("required") or []))
                if fresh is not MISSING:
                    found[name] = fresh
                continue
            inner = read(sub, root, data, keys.child(key, name), scratch, depth + 1, False, picks)
            if inner is not MISSING:
                found[name] = inner
        extra = _read_json(data, f"{key}.$extra", scratch) if f"{key}.$extra.$json" in data else {}
        if isinstance(extra, dict):
            found.update({k: v for k, v in extra.items() if k not in found})
        value = found
    for name, messages in scratch.items():
        problems.setdefault(name, []).extend(messages)
    return value


def changes(value: Any, baseline: Any) -> Any:
    """What differs from `baseline`: objects key by key, anything else whole (MISSING: none)."""
    if isinstance(value, Mapping) and isinstance(baseline, Mapping):
        diff = {}
        for name, inner in value.items():
            if name not in baseline:
                diff[name] = inner
                continue
            changed = changes(inner, baseline[name])
            if changed is not MISSING:
                diff[name] = changed
        return diff if diff else MISSING
    return MISSING if value == baseline else value


def complete(schema: Any, root: Schema, value: Any, depth: int = 0) -> Any:
    """`value` with every absent property that has a default (or a prefill) filled in.

    A fresh form shows those defaults, so the baseline that "changed" is measured against must
    hold them too; otherwise an untouched checkbox would count as a change.
    """
    try:
        node = effective(schema, root, value if isinstance(value, dict) else None)
    except Unrenderable:
        return value
    kind = widget_kind(node, depth)
    if kind == "object" and isinstance(value, dict):
        filled = dict(value)
        for name, sub in (node.get("properties") or {}).items():
            if name in filled:
                filled[name] = complete(sub, root, filled[name], depth + 1)
            else:
                fresh = prefill(sub, root, depth + 1)
                if fresh is not MISSING:
                    filled[name] = complete(sub, root, fresh, depth + 1)
        return filled
    if kind == "union" and value is not MISSING:
        branches = variants(node, root) or []
        if branches:
            return complete(branches[variant_for(value, branches, root)], root, value, depth + 1)
    if kind == "array" and isinstance(value, list):
        return [complete(node.get("items", {}), root, item, depth + 1) for item in value]
    return value
