"""Field-level diffs and three-way merges of objects, by the schema's list and map types.

An editor that saved a stale copy must not undo what others wrote meanwhile. `merge` takes the
version the editor started from (the base), the editor's version (mine) and the latest stored
version (theirs), and applies on top of theirs only the fields mine changed against the base.
Where both changed one field differently it reports a `Conflict` (base, mine and theirs of that
field) instead of guessing; a caller's `picks` settle conflicts field by field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.fieldsets import ListTypes

# Granularity follows server-side apply's (`ListTypes`, from the kind's schema): maps merge key
# by key unless ``x-kubernetes-map-type: atomic``; lists of ``x-kubernetes-list-type: map`` merge
# item by item, keyed by their keys; sets item by item; every other list, and every list whose
# items cannot be keyed that way, is one value. `diff` walks the same way and names each changed
# field. Both visit every node a bounded number of times (linear in the objects' sizes, which the
# body bounds cap) and recurse once per level (the bounds cap depth at 100).
#
# Field paths read as the console shows them: ``spec.launcher``, ``metadata.labels.team``,
# ``metadata.labels["app.kubernetes.io/name"]`` (a key that is not a plain name is JSON-quoted),
# ``spec.outputs[name="model"].path`` (an item of a map-list by its keys) and
# ``spec.modes["Train"]`` (an item of a set). A path names one field unambiguously, so it doubles
# as the name of the choice made for it.


class _Absent:
    """A field that is not set (as distinct from one set to null)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Change:
    """One field that differs: its value before and after (`ABSENT` when not set)."""

    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class Conflict:
    """One field both sides changed, differently: its three values (`ABSENT` when not set)."""

    path: str
    base: Any
    mine: Any
    theirs: Any


@dataclass
class Merge:
    """The merged object; its conflicts, settled by a pick where one was given and otherwise
    holding theirs; `unresolved` names the conflicts with no pick."""

    merged: dict[str, Any]
    conflicts: list[Conflict] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.unresolved


def same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, and key order does not count."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and a == b


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(key: Any) -> bool:
    if not isinstance(key, str) or not key:
        return False
    return all(c.isascii() and (c.isalnum() or c in "_-") for c in key)


def _key_path(shown: str, key: Any) -> str:
    if not _plain(key):
        return f"{shown}[{_json(key)}]"
    return f"{shown}.{key}" if shown else key


def _item_path(shown: str, dotted: str, item: Any, types: ListTypes) -> str:
    if types.declared(dotted) == "map":
        keys = ",".join(f"{k}={_json(item[k])}" for k in types.keys(dotted) if k in item)
        return f"{shown}[{keys}]"
    return f"{shown}[{_json(item)}]"


def _granular_map(value: Any, dotted: str, types: ListTypes) -> bool:
    return isinstance(value, dict) and not types.atomic_map(dotted)


def _keyed(value: Any, dotted: str, types: ListTypes) -> dict[str, Any] | None:
    """A map-list's or a set's items by their key, or None for a value merged whole."""
    if not isinstance(value, list) or types.kind(dotted, value) == "atomic":
        return None
    return {types.item_key(dotted, item): item for item in value}


def _child_dotted(dotted: str, key: Any) -> str:
    return f"{dotted}.{key}" if dotted else key


def diff(old: Any, new: Any, types: ListTypes) -> list[Change]:
    """Every field that differs between `old` and `new`, in the order the objects hold them."""
    changes: list[Change] = []
    _diff(old, new, types, "", "", changes)
    return changes


def _diff(old: Any, new: Any, types: ListTypes, dotted: str, shown: str, out: list) -> None:
    if _granular_map(old, dotted, types) and _granular_map(new, dotted, types):
        for key in [*old, *(k for k in new if k not in old)]:
            child = _child_dotted(dotted, key)
            before, after = old.get(key, ABSENT), new.get(key, ABSENT)
            _diff(before, after, types, child, _key_path(shown, key), out)
        return
    old_items, new_items = _keyed(old, dotted, types), _keyed(new, dotted, types)
    if old_items is not None and new_items is not None:
        found = len(out)
        for key in [*old_items, *(k for k in new_items if k not in old_items)]:
            item = new_items.get(key, old_items.get(key))
            path = _item_path(shown, dotted, item, types)
            if types.declared(dotted) == "set":
                if (key in old_items) != (key in new_items):
                    before = old_items.get(key, ABSENT)
                    out.append(Change(path, before, new_items.get(key, ABSENT)))
                continue
            before, after = old_items.get(key, ABSENT), new_items.get(key, ABSENT)
            _diff(before, after, types, dotted, path, out)
        # The same items in another order: the list changed as a whole.
        if len(out) == found and list(old_items) != list(new_items):
            out.append(Change(shown, old, new))
        return
    if not same(old, new):
        out.append(Change(shown, old, new))


def merge(
    base: Any,
    mine: Any,
    theirs: Any,
    types: ListTypes,
    picks: Mapping[str, str] | None = None,
) -> Merge:
    """Applies to `theirs` the fields `mine` changed against `base` (see the module's doc).

    `picks` maps a conflict's path to ``"mine"``, ``"theirs"`` or ``"base"``: the value that
    field takes. Any other pick counts as none.
    """
    result = Merge({})
    merged = _merge(base, mine, theirs, types, "", "", dict(picks or {}), result)
    result.merged = merged if isinstance(merged, dict) else {}
    return result


def _merge(
    base: Any,
    mine: Any,
    theirs: Any,
    types: ListTypes,
    dotted: str,
    shown: str,
    picks: dict[str, str],
    result: Merge,
) -> Any:
    if _granular_map(mine, dotted, types) and _granular_map(theirs, dotted, types):
        # Both sides hold a map: merge it key by key (a base that held none counts as empty).
        old = base if _granular_map(base, dotted, types) else {}
        merged: dict[str, Any] = {}
        # A key gone from both sides stays gone: only the sides' keys are visited.
        for key in [*theirs, *(k for k in mine if k not in theirs)]:
            value = _merge(
                old.get(key, ABSENT),
                mine.get(key, ABSENT),
                theirs.get(key, ABSENT),
                types,
                _child_dotted(dotted, key),
                _key_path(shown, key),
                picks,
                result,
            )
            if value is not ABSENT:
                merged[key] = value
        return merged
    mine_items, theirs_items = _keyed(mine, dotted, types), _keyed(theirs, dotted, types)
    if mine_items is not None and theirs_items is not None:
        base_items = _keyed(base, dotted, types) or {}
        items: list[Any] = []
        for key in [*theirs_items, *(k for k in mine_items if k not in theirs_items)]:
            sample = theirs_items.get(key, mine_items.get(key))
            value = _merge(
                base_items.get(key, ABSENT),
                mine_items.get(key, ABSENT),
                theirs_items.get(key, ABSENT),
                types,
                dotted,
                _item_path(shown, dotted, sample, types),
                picks,
                result,
            )
            if value is not ABSENT:
                items.append(value)
        return items
    if same(mine, base):
        return theirs
    if same(theirs, base) or same(mine, theirs):
        return mine
    conflict = Conflict(shown, base, mine, theirs)
    result.conflicts.append(conflict)
    values = {"mine": mine, "theirs": theirs, "base": base}
    pick = picks.get(shown, "")
    if pick in values:
        return values[pick]
    result.unresolved.append(shown)
    return theirs
