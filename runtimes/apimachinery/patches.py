"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain JSON values.

Inputs are never mutated: every function works on deep copies. JSON patch failures raise
``PatchError`` with messages modelled on evanphx/json-patch, the library kube-apiserver uses
(``testing value /spec/task failed: test failed``); the API answers 422, or 400 when the patch
document itself is malformed (``PatchError.malformed``).

A JSON patch is bounded as kube-apiserver bounds it (`bounds`): at most 10,000 operations (413),
paths at most 100 tokens deep (400: no object is deeper), and ``copy`` operations may duplicate
at most 250,000 nodes in all (413), so a short patch cannot double the document twenty times.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from jsonpointer import JsonPointer, JsonPointerException

from runtimes.apimachinery import bounds

_MISSING = "missing value"
_INVALID_INDEX = "invalid index referenced"


class PatchError(ValueError):
    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.malformed = malformed  # not a JSON patch document at all (400, not 422)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch: objects merge recursively, ``null`` deletes, anything else replaces."""
    return _merge_into(copy.deepcopy(target), patch)


def _merge_into(target: Any, patch: Any) -> Any:
    # ``target`` is already our own copy, so it may be changed in place.
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for name, value in patch.items():
        if value is None:
            target.pop(name, None)
        else:
            target[name] = _merge_into(target.get(name), value)
    return target


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The two-way merge patch that turns ``original`` into ``modified`` ({} when equal)."""
    if not isinstance(original, Mapping) or not isinstance(modified, Mapping):
        return copy.deepcopy(modified)
    patch: dict[str, Any] = {}
    for name in original:
        if name not in modified:
            patch[name] = None
    for name, value in modified.items():
        if name not in original:
            patch[name] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(original[name], Mapping):
            nested = create_merge_patch(original[name], value)
            if nested:
                patch[name] = nested
        elif not json_equal(original[name], value):
            patch[name] = copy.deepcopy(value)
    return patch


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: 1 == 1.0, but true is not 1 and key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def parse_pointer(pointer: str) -> list[str]:
    """RFC 6901 reference tokens, unescaped (``~1`` is ``/``, ``~0`` is ``~``)."""
    # Checked here first: jsonpointer looks at escapes before the leading slash, and says less.
    if pointer and not pointer.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{pointer}": must be empty or start with "/"')
    try:
        return JsonPointer(pointer).parts
    except JsonPointerException:
        raise PatchError(
            f'invalid JSON pointer "{pointer}": bad escape in "{_badly_escaped(pointer)}"'
        ) from None


def _badly_escaped(pointer: str) -> str:
    """The first reference token of ``pointer`` that jsonpointer refuses on its own."""
    for token in pointer[1:].split("/"):
        try:
            JsonPointer("/" + token)
        except JsonPointerException:
            return token
    return pointer[1:]


def _array_index(token: str, length: int, *, for_add: bool, path: str, op: str) -> int:
    if for_add and token == "-":
        return length
    if not token.isascii() or not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(
            f"error in {op} for path: '{path}': value was not a proper array index: '{token}'"
        )
    # Past 18 digits no array is that long; int() would refuse 4,300 of them with a ValueError.
    index = int(token) if len(token) <= 18 else length + 1
    if index > length or (index == length and not for_add):
        raise PatchError(
            f"error in {op} for path: '{path}': Unable to access invalid index: {token}: "
            + _INVALID_INDEX
        )
    return index


def _parent(doc: Any, tokens: list[str]) -> Any | None:
    """The container holding the last token, or None when the path does not exist."""
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict):
            if token not in current:
                return None
            current = current[token]
        elif isinstance(current, list):
            if not token.isascii() or not token.isdigit() or len(token) > 18:
                return None
            if len(token) > 1 and token[0] == "0":
                return None
            index = int(token)
            if index >= len(current):
                return None
            current = current[index]
        else:
            return None
    return current if isinstance(current, dict | list) else None


def _get(doc: Any, path: str, op: str, what: str) -> Any:
    tokens = parse_pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    key = tokens[-1]
    if isinstance(parent, dict) and key in parent:
        return parent[key]
    if isinstance(parent, list):
        return parent[_array_index(key, len(parent), for_add=False, path=path, op=op)]
    raise PatchError(f"{op} operation does not apply: {what}: {path}: {_MISSING}")


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    tokens = parse_pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    if parent is None:
        raise PatchError(
            f'{op} operation does not apply: doc is missing path: "{path}": {_MISSING}'
        )
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    else:
        index = _array_index(tokens[-1], len(parent), for_add=True, path=path, op=op)
        parent.insert(index, value)
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> tuple[Any, Any]:
    tokens = parse_pointer(path)
    if not tokens:
        raise PatchError(f"{op} operation does not apply: cannot remove the whole document")
    parent = _parent(doc, tokens)
    key = tokens[-1]
    if parent is None:
        raise PatchError(
            f'{op} operation does not apply: doc is missing path: "{path}": {_MISSING}'
        )
    if isinstance(parent, dict):
        if key not in parent:
            raise PatchError(
                f"error in {op} for path: '{path}': Unable to remove nonexistent key: {key}: "
                + _MISSING
            )
        return doc, parent.pop(key)
    index = _array_index(key, len(parent), for_add=False, path=path, op=op)
    return doc, parent.pop(index)


def _replace(doc: Any, path: str, value: Any) -> Any:
    tokens = parse_pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    key = tokens[-1]
    if isinstance(parent, dict) and key in parent:
        parent[key] = value
    elif isinstance(parent, list):
        parent[_array_index(key, len(parent), for_add=False, path=path, op="replace")] = value
    else:
        raise PatchError(
            f"replace operation does not apply: doc is missing key: {path}: {_MISSING}"
        )
    return doc


def _field(operation: Mapping[str, Any], name: str, kind: str) -> Any:
    if name not in operation:
        raise PatchError(f"{kind} operation missing {name} field: {_MISSING}")
    value = operation[name]
    if name in ("path", "from") and not isinstance(value, str):
        raise PatchError(f"{kind} operation failed to decode {name}")
    return value


def json_patch(doc: Any, operations: Any) -> Any:
    """Applies an RFC 6902 patch to a copy of ``doc``; the first failing op aborts the lot."""
    if not isinstance(operations, Sequence) or isinstance(operations, str | bytes):
        raise PatchError(
            "json: cannot unmarshal the patch into a list of operations", malformed=True
        )
    if len(operations) > bounds.MAX_JSON_PATCH_OPS:
        raise bounds.BoundExceeded(
            "The allowed maximum operations in a JSON patch is "
            f"{bounds.MAX_JSON_PATCH_OPS}, got {len(operations)}",
            "Send the change in several patches, or as one merge patch or PUT.",
            "RequestEntityTooLarge",
        )
    result = copy.deepcopy(doc)
    copied = 0
    for operation in operations:
        if not isinstance(operation, Mapping):
            raise PatchError(
                "json: cannot unmarshal a patch operation that is not an object", malformed=True
            )
        kind = operation.get("op")
        path = _field(operation, "path", str(kind)) if kind in _OPS else ""
        if path.count("/") > bounds.MAX_DEPTH:
            raise PatchError(
                f"the path of a {kind} operation is more than {bounds.MAX_DEPTH} levels deep",
                malformed=True,
            )
        if kind == "add":
            value = copy.deepcopy(_field(operation, "value", kind))
            result = _add(result, path, value)
        elif kind == "remove":
            result, _ = _remove(result, path)
        elif kind == "replace":
            value = copy.deepcopy(_field(operation, "value", kind))
            result = _replace(result, path, value)
        elif kind == "move":
            source = _field(operation, "from", kind)
            if path != source and (path + "/").startswith(source + "/"):
                raise PatchError(
                    f"move operation does not apply: cannot move {source} into its child {path}"
                )
            _get(result, source, kind, "doc is missing from path")
            if path != source:
                result, value = _remove(result, source, kind)
                result = _add(result, path, value, kind)
        elif kind == "copy":
            source = _field(operation, "from", kind)
            original = _get(result, source, kind, "doc is missing from path")
            copied += bounds.count_nodes(original, bounds.MAX_COPIED_NODES - copied)
            if copied > bounds.MAX_COPIED_NODES:
                raise bounds.BoundExceeded(
                    f"the JSON patch's copy operations duplicate more than "
                    f"{bounds.MAX_COPIED_NODES} values",
                    "Copy less, or send the object as it should be (PUT or apply).",
                    "RequestEntityTooLarge",
                )
            value = copy.deepcopy(original)
            result = _add(result, path, value, kind)
        elif kind == "test":
            expected = _field(operation, "value", kind)
            actual = _get(result, path, kind, "is missing path")
            if not json_equal(actual, expected):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    return result


_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})
