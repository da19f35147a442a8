"""Field sets for server-side apply: which fields an object sets, their FieldsV1 encoding, and
the merge of an applied configuration into a live object by the same list rules.

A field path is a tuple of FieldsV1 keys: ``f:<name>`` for a map field, ``k:<json>`` for an item
of a list of maps (``x-kubernetes-list-type: map``, keyed by ``x-kubernetes-list-map-keys``),
``v:<json>`` for an item of a set (``x-kubernetes-list-type: set``). Every other list is atomic:
owned as one leaf, as is a map the schema declares ``x-kubernetes-map-type: atomic``. These
types come from the kind's schema (`ListTypes`, built by ``schema_nodes.merge_types``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# Only the parts of an object a client manages are tracked: ``spec``, ``status`` and metadata
# less what kube's fieldmanager strips (name, namespace and the server-set fields: uid,
# resourceVersion, generation, creationTimestamp, managedFields, ...).

FieldPath = tuple[str, ...]
ListKind = Literal["atomic", "map", "set"]

# Markers for members that have children: a map-list item, and a map. An item is always a
# member in its own right; a map only for ordinary writes that create it (kube's compare marks
# added maps, so Update entries show ``"f:spec": {".": {}, ...}``), never for an applier.
ITEM = object()
MAP = object()
MARKERS = (ITEM, MAP)

# kube's stripMeta drops these (plus apiVersion and kind) before computing field sets.
_STRIPPED_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
        "selfLink",
        "managedFields",
    }
)
_TRACKED_ROOTS = ("spec", "status")
# ObjectMeta's own list types (apimachinery types.go: +listType markers), true for every kind.
_METADATA_LISTS: dict[str, tuple[ListKind, tuple[str, ...]]] = {
    "metadata.finalizers": ("set", ()),
    "metadata.ownerReferences": ("map", ("uid",)),
}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ListTypes:
    """How lists and maps are merged and owned, by dotted field path (list items do not add to
    the path). ``map_keys`` names map-lists alone (the older, shorter form); ``lists`` gives
    every declared list its ``x-kubernetes-list-type`` and keys; ``atomic_maps`` are the maps
    declared ``x-kubernetes-map-type: atomic``. Anything undeclared is an atomic list or a
    granular map, as for a CRD's structural schema."""

    map_keys: Mapping[str, Sequence[str]] = field(default_factory=dict)
    lists: Mapping[str, tuple[ListKind, tuple[str, ...]]] = field(default_factory=dict)
    atomic_maps: frozenset[str] = frozenset()
    # Maps whose keys are not schema fields (labels, a map of numbers), and the roots of
    # subtrees the schema leaves open (x-kubernetes-preserve-unknown-fields), where every map
    # is such a map. structured-merge-diff makes each key of these a member of its own, so a
    # nested map there shows ``".": {}`` in an Apply entry too.
    free_maps: frozenset[str] = frozenset()
    deduced: frozenset[str] = frozenset()

    def free(self, dotted: str) -> bool:
        if dotted in self.free_maps or dotted in ("metadata.labels", "metadata.annotations"):
            return True
        return any(dotted == root or dotted.startswith(root + ".") for root in self.deduced)

    def declared(self, dotted: str) -> ListKind:
        if dotted in self.lists:
            return self.lists[dotted][0]
        if dotted in self.map_keys:
            return "map"
        if dotted in _METADATA_LISTS:
            return _METADATA_LISTS[dotted][0]
        return "atomic"

    def keys(self, dotted: str) -> Sequence[str]:
        if dotted in self.lists:
            return self.lists[dotted][1]
        if dotted in self.map_keys:
            return self.map_keys[dotted]
        return _METADATA_LISTS.get(dotted, ("atomic", ()))[1]

    def atomic_map(self, dotted: str) -> bool:
        return dotted in self.atomic_maps

    def kind(self, dotted: str, items: list[Any]) -> ListKind:
        """The declared kind, or atomic when the items cannot be keyed that way."""
        declared = self.declared(dotted)
        if declared == "map":
            keys = self.keys(dotted)
            if not all(isinstance(i, dict) and any(k in i for k in keys) for i in items):
                return "atomic"
            if len({self.item_key(dotted, i) for i in items}) != len(items):
                return "atomic"
        elif declared == "set":
            scalars = all(not isinstance(i, dict | list) for i in items)
            if not scalars or len({_json(i) for i in items}) != len(items):
                return "atomic"
        return declared

    def item_key(self, dotted: str, item: Any) -> str:
        """The FieldsV1 key of a list item: ``k:{...}`` for map-lists, ``v:...`` for sets."""
        if self.declared(dotted) == "map":
            keys = self.keys(dotted)
            return "k:" + _json({k: item[k] for k in keys if k in item})
        return "v:" + _json(item)


def list_types(map_keys: Mapping[str, Sequence[str]] | ListTypes | None) -> ListTypes:
    if isinstance(map_keys, ListTypes):
        return map_keys
    return ListTypes(dict(map_keys or {}))


def object_fields(obj: Mapping[str, Any] | None, types: ListTypes) -> dict[FieldPath, Any]:
    """Every member path of the tracked parts of ``obj``, with the value found there."""
    out: dict[FieldPath, Any] = {}
    if not obj:
        return out
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        for name, value in metadata.items():
            if name not in _STRIPPED_METADATA:
                _walk(value, ("f:metadata", f"f:{name}"), f"metadata.{name}", types, out)
    for root in _TRACKED_ROOTS:
        if root in obj:
            _walk(obj[root], (f"f:{root}",), root, types, out)
    return out


def _walk(
    value: Any, path: FieldPath, dotted: str, types: ListTypes, out: dict, member: bool = False
) -> None:
    if isinstance(value, dict) and value and not types.atomic_map(dotted):
        free = types.free(dotted)
        for name, child in value.items():
            _walk(child, (*path, f"f:{name}"), f"{dotted}.{name}", types, out, free)
        out[path] = ITEM if member else MAP
    elif isinstance(value, list) and value and types.kind(dotted, value) != "atomic":
        for item in value:
            item_path = (*path, types.item_key(dotted, item))
            if types.declared(dotted) == "map":
                for name, child in item.items():
                    _walk(child, (*item_path, f"f:{name}"), f"{dotted}.{name}", types, out)
                out[item_path] = ITEM
            else:
                out[item_path] = item
        # Like a map, a list of items is a member only where an ordinary write creates it
        # (structured-merge-diff's compare adds it; an applier's field set never holds it),
        # unless it is the value of an open map's key, which is always a member.
        out[path] = ITEM if member else MAP
    else:
        # Scalars, nulls, empty maps and atomic lists are leaves.
        out[path] = value


def applied_fields(obj: Mapping[str, Any] | None, types: ListTypes) -> set[FieldPath]:
    """The set an applier owns: leaves and keyed items, not the maps that hold them."""
    return {path for path, value in object_fields(obj, types).items() if value is not MAP}


def encode_fields_v1(paths: Iterable[FieldPath]) -> dict[str, Any]:
    """The FieldsV1 trie: ``{}`` for a leaf member, ``".": {}`` for a member with children."""
    members = set(paths)
    root: dict[str, Any] = {}
    for path in members:
        node = root
        for element in path:
            node = node.setdefault(element, {})
    for path in members:
        node = root
        for element in path:
            node = node[element]
        if node:
            node["."] = {}
    return _sorted_trie(root)


def _sorted_trie(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted_trie(node[k]) for k in sorted(node, key=lambda k: (k != ".", k))}


def decode_fields_v1(trie: Mapping[str, Any] | None) -> set[FieldPath]:
    members: set[FieldPath] = set()

    def visit(node: Mapping[str, Any], path: FieldPath) -> None:
        children = [k for k in node if k != "."]
        if path and (not children or "." in node):
            members.add(path)
        for key in children:
            child = node[key]
            visit(child if isinstance(child, Mapping) else {}, (*path, key))

    visit(trie or {}, ())
    return members


def _to_string(value: Any) -> str:
    # structured-merge-diff's value.ToString: strings quoted, everything else bare.
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def path_string(path: FieldPath) -> str:
    """The path as kube prints it in conflicts: ``.spec.presets[method="LoRA",model="x"]``."""
    parts: list[str] = []
    for element in path:
        kind, body = element[:2], element[2:]
        if kind == "f:":
            parts.append("." + body)
        elif kind == "k:":
            key = json.loads(body)
            parts.append("[" + ",".join(f"{k}={_to_string(key[k])}" for k in sorted(key)) + "]")
        elif kind == "v:":
            parts.append(f"[={_to_string(json.loads(body))}]")
        elif kind == "i:":
            parts.append(f"[{body}]")
        else:
            parts.append("{{invalid path element}}")
    return "".join(parts)


def merge_objects(live: Any, config: Any, types: ListTypes, dotted: str = "") -> Any:
    """Applied configuration over live: maps recurse, keyed lists merge, the rest replaces."""
    if isinstance(live, dict) and isinstance(config, dict) and not types.atomic_map(dotted):
        merged = copy.deepcopy(live)
        for name, value in config.items():
            path = f"{dotted}.{name}" if dotted else name
            merged[name] = (
                merge_objects(live[name], value, types, path)
                if name in live
                else copy.deepcopy(value)
            )
        return merged
    if (
        isinstance(live, list)
        and isinstance(config, list)
        and types.kind(dotted, config) != "atomic"
        and types.kind(dotted, live) != "atomic"
    ):

        def key(item: Any) -> str:
            return types.item_key(dotted, item)

        def merge_item(old: Any, new: Any) -> Any:
            return copy.deepcopy(new) if old is None else merge_objects(old, new, types, dotted)

        return _merge_keyed(live, config, key, merge_item)
    return copy.deepcopy(config)


def _merge_keyed(
    live: list[Any],
    config: list[Any],
    key: Callable[[Any], str],
    merge_item: Callable[[Any, Any], Any],
) -> list[Any]:
    """structured-merge-diff's associative-list order: the applied order of shared items wins,
    live-only items keep their place relative to them, new items follow their applied neighbours.
    """
    live_keys, config_keys = [key(i) for i in live], [key(i) for i in config]
    live_items, config_items = (
        dict(zip(live_keys, live, strict=True)),
        dict(zip(config_keys, config, strict=True)),
    )
    shared = iter([k for k in config_keys if k in live_items])
    next_shared = next(shared, None)
    out: list[Any] = []
    done: set[str] = set()
    li = ri = 0
    while li < len(live_keys) or ri < len(config_keys):
        if li < len(live_keys) and ri < len(config_keys):
            current = live_keys[li]
            if current == config_keys[ri]:
                done.add(current)
                out.append(merge_item(live_items[current], config_items[current]))
                li, ri = li + 1, ri + 1
                next_shared = next(shared, None)
                continue
            if current in config_items and next_shared is not None and next_shared != current:
                li += 1  # a shared item, but not the one the applied order wants next
                continue
        if li < len(live_keys):
            current = live_keys[li]
            if current not in config_items:
                out.append(copy.deepcopy(live_items[current]))
                li += 1
                continue
            if current in done:
                li += 1
                continue
        if ri < len(config_keys):
            current = config_keys[ri]
            done.add(current)
            out.append(merge_item(live_items.get(current), config_items[current]))
            ri += 1
            if next_shared == current:
                next_shared = next(shared, None)
    return out
