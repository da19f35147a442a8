"""Server-side apply as structured-merge-diff does it, and ``metadata.managedFields``.

Every write records who set which fields. ``record_update`` handles ordinary writes (an
``Update`` entry per manager, API version and subresource); ``apply`` handles
``application/apply-patch+yaml``: the applied configuration is the manager's whole intent, so it
is merged into the live object, fields the manager applied before but omits now are removed
unless someone else owns them, and changing a field another manager owns to a different value
is a conflict (409) unless ``force`` is set. Two managers that set the same value both own it
(co-ownership): one dropping it leaves it to the other.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from runtimes.apimachinery import fielderrors
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.fieldsets import (
    MAP,
    MARKERS,
    FieldPath,
    ListTypes,
    applied_fields,
    decode_fields_v1,
    encode_fields_v1,
    list_types,
    merge_objects,
    object_fields,
    path_string,
)
from runtimes.apimachinery.meta import SERVER_SET_METADATA
from runtimes.apimachinery.patches import json_equal

# Granularity comes from the kind's schema (``ListTypes``): ``x-kubernetes-list-type`` atomic,
# set or map (with ``x-kubernetes-list-map-keys``) and ``x-kubernetes-map-type``. As kube, the
# apply of manager ``kubectl`` takes over the fields of a client-side apply whose values still
# match the last-applied annotation, and keeps that annotation in step (kube's lastAppliedManager
# and lastAppliedUpdater); kubectl itself upgrades the ``kubectl-client-side-apply`` entry with a
# JSON patch of ``metadata.managedFields`` (client-go csaupgrade), which ``incoming_entries``
# honours like any managedFields a client writes. Entries are plain ``ManagedFieldsEntry`` dicts
# as they appear in ``metadata.managedFields``. Update managers are not capped at ten as kube does.

BEFORE_FIRST_APPLY = "before-first-apply"
# kubectl's default field manager for server-side apply, the only one kube upgrades from
# client-side apply on the server (lastAppliedManager) and whose apply keeps the annotation.
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
OPERATIONS = ("Apply", "Update")
MANAGER_MAX_LENGTH = 128  # apimachinery's FieldManagerMaxLength
SUBRESOURCE_MAX_LENGTH = 256  # apimachinery's MaxSubresourceNameLength
_FIELDS_V1_MAX_DEPTH = 128
_ABSENT = object()
MapKeys = Mapping[str, Sequence[str]] | ListTypes | None


class Conflict(NamedTuple):
    field: str  # ".spec.image"
    manager: str
    api_version: str
    operation: str = "Update"
    subresource: str = ""
    path: FieldPath = ()

    @property
    def manager_description(self) -> str:
        """apimachinery's printManager: the API version is shown for Update managers only."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def as_cause(self) -> dict[str, str]:
        return {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {self.manager_description}",
            "field": self.field,
        }


class ApplyConflict(Exception):
    """Another manager owns fields the applied configuration changes: 409 Conflict."""

    def __init__(self, conflicts: Sequence[Conflict]) -> None:
        self.conflicts = sorted(
            conflicts, key=lambda c: (c.manager, c.operation, c.subresource, c.field)
        )
        self.message = conflict_message(self.conflicts)
        self.causes = [c.as_cause() for c in self.conflicts]
        super().__init__(self.message)


def conflict_message(conflicts: Sequence[Conflict]) -> str:
    if len(conflicts) == 1:
        only = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {only.manager_description}: {only.field}"
        )
    by_manager: dict[str, list[str]] = {}
    for conflict in conflicts:
        by_manager.setdefault(conflict.manager_description, []).append(conflict.field)
    lines: list[str] = []
    for manager in sorted(by_manager):
        lines.append(f"conflicts with {manager}:")
        lines.extend(f"- {path}" for path in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    subresource: str = ""
    fields: set[FieldPath] = field(default_factory=set)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # Appliers keep one entry across API versions; updaters get one per version.
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = encode_fields_v1(self.fields)
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _decode_entries(managed_fields: Iterable[Mapping[str, Any]] | None) -> list[_Entry]:
    entries: dict[tuple[str, str, str, str], _Entry] = {}
    for raw in managed_fields or []:
        entry = _Entry(
            manager=str(raw.get("manager", "")),
            operation=str(raw.get("operation", "Update")),
            api_version=str(raw.get("apiVersion", "")),
            time=raw.get("time"),
            subresource=str(raw.get("subresource", "") or ""),
            fields=decode_fields_v1(raw.get("fieldsV1")),
        )
        if entry.identity in entries:
            entries[entry.identity].fields |= entry.fields
        else:
            entries[entry.identity] = entry
    return list(entries.values())


def incoming_entries(
    requested: Any, live: list[dict[str, Any]] | None, subresource: str
) -> list[dict[str, Any]]:
    """The managedFields a non-apply write starts from: kube's decodeLiveOrNew.

    A client may write managedFields (kubectl's client-side to server-side apply upgrade
    replaces them with a JSON patch). They are taken when they decode; a body without them, with
    an empty list (which kube's ObjectMeta round trip drops) or with entries that do not decode
    keeps the live ones, so clients unaware of the field never lose them. A list of one empty
    entry, ``[{}]``, resets them. Writes to a subresource never change them.
    """
    live = list(live or [])
    if subresource or requested is None:
        return live
    if not isinstance(requested, list) or not requested:
        return live
    if requested == [{}]:
        return []
    if not all(_decodes(entry) for entry in requested):
        return live
    return [dict(entry) for entry in requested]


def _decodes(entry: Any) -> bool:
    """Whether kube's DecodeManagedFields takes the entry (operation, apiVersion, FieldsV1)."""
    if not isinstance(entry, dict):
        return False
    if entry.get("operation") not in OPERATIONS:
        return False
    if not isinstance(entry.get("apiVersion"), str) or not entry["apiVersion"]:
        return False
    if entry.get("fieldsType") != "FieldsV1":
        return False
    for key in ("manager", "subresource", "time"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return False
    return _valid_trie(entry.get("fieldsV1", {}))


def _valid_trie(trie: Any) -> bool:
    """A FieldsV1 trie: maps whose keys are ``.`` or a path element, to depth 128."""
    pending: list[tuple[Any, int]] = [(trie, 0)]
    while pending:
        node, depth = pending.pop()
        if not isinstance(node, dict) or depth > _FIELDS_V1_MAX_DEPTH:
            return False
        for key, child in node.items():
            if key == ".":
                if child != {}:
                    return False
                continue
            if not _valid_element(key):
                return False
            pending.append((child, depth + 1))
    return True


def _valid_element(key: str) -> bool:
    kind, body = key[:2], key[2:]
    if kind == "f:":
        return True
    if kind in ("k:", "v:", "i:"):
        try:
            value = json.loads(body)
        except ValueError:
            return False
        if kind == "k:":
            return isinstance(value, dict)
        if kind == "i:":
            return isinstance(value, int) and not isinstance(value, bool)
        return True
    return False


def validation_errors(entries: Sequence[Mapping[str, Any]]) -> list[FieldError]:
    """apimachinery's ValidateManagedFields on what a write would store."""
    problems: list[FieldError] = []
    for index, entry in enumerate(entries):
        at = f"metadata.managedFields[{index}]"
        operation = entry.get("operation", "")
        if operation not in OPERATIONS:
            problems.append(
                fielderrors.invalid(f"{at}.operation", operation, "must be `Apply` or `Update`")
            )
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            problems.append(
                fielderrors.invalid(f"{at}.fieldsType", fields_type, "must be `FieldsV1`")
            )
        manager = str(entry.get("manager") or "")
        problems.extend(manager_errors(manager, f"{at}.manager"))
        subresource = str(entry.get("subresource") or "")
        if len(subresource.encode()) > SUBRESOURCE_MAX_LENGTH:
            problems.append(fielderrors.too_long(f"{at}.subresource", SUBRESOURCE_MAX_LENGTH))
    return problems


def manager_errors(manager: str, field: str) -> list[FieldError]:
    """apimachinery's ValidateFieldManager: at most 128 bytes, printable characters only."""
    problems: list[FieldError] = []
    if len(manager.encode()) > MANAGER_MAX_LENGTH:
        problems.append(fielderrors.too_long(field, MANAGER_MAX_LENGTH))
    for index, char in enumerate(manager):
        if not char.isprintable():
            position = len(manager[:index].encode())  # Go ranges over a string by byte offset
            problems.append(
                fielderrors.invalid(
                    field,
                    manager,
                    f"invalid character {_go_unicode(char)} (at position {position})",
                )
            )
    return problems


def _go_unicode(char: str) -> str:
    """Go's %#U: U+0007 (without the quoted glyph, which non-printables do not get)."""
    return f"U+{ord(char):04X}"


def _encode_entries(entries: Iterable[_Entry]) -> list[dict[str, Any]]:
    kept = [e for e in entries if e.fields]
    # kube's sortEncodedManagedFields: operation, then time, manager, apiVersion, subresource.
    kept.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    return [e.encode() for e in kept]


def _same(before: Any, after: Any) -> bool:
    if before is _ABSENT:
        return False
    if any(before is m or after is m for m in MARKERS):
        return before is after  # a map or item is never "modified", only added or removed
    return json_equal(before, after)


def _diff(
    old: Mapping[FieldPath, Any], new: Mapping[FieldPath, Any]
) -> tuple[set[FieldPath], set[FieldPath]]:
    """(added or modified, removed) between two field maps."""
    changed = {path for path, value in new.items() if not _same(old.get(path, _ABSENT), value)}
    return changed, set(old) - set(new)


def record_update(
    managed_fields: Iterable[Mapping[str, Any]] | None,
    manager: str,
    operation: str,
    api_version: str,
    old_obj: Mapping[str, Any] | None,
    new_obj: Mapping[str, Any],
    subresource: str,
    time: str,
    *,
    list_map_keys: MapKeys = None,
) -> list[dict[str, Any]]:
    """managedFields after a non-apply write (create, update, patch) by ``manager``.

    The manager takes the fields it added or changed from everyone; removed fields leave every
    entry; entries left empty are dropped. A write that changes nothing leaves ownership alone.
    ``managed_fields`` are the entries the write starts from: the live ones, or those the
    request carries (`incoming_entries` decides, as kube's decodeLiveOrNew).
    """
    types = list_types(list_map_keys)
    changed, removed = _diff(object_fields(old_obj, types), object_fields(new_obj, types))
    entries = _decode_entries(managed_fields)
    for entry in entries:
        entry.fields -= changed | removed
    if changed:
        mine = _Entry(manager, operation, api_version, time, subresource)
        existing = next((e for e in entries if e.identity == mine.identity), None)
        if existing is None:
            entries.append(mine)
        else:
            mine = existing
            mine.time = time
        mine.fields |= changed
    return _encode_entries(entries)


def apply(
    live_obj: Mapping[str, Any] | None,
    applied_obj: Mapping[str, Any],
    manager: str,
    force: bool,
    managed_fields: Iterable[Mapping[str, Any]] | None,
    api_version: str,
    time: str,
    *,
    list_map_keys: MapKeys = None,
    subresource: str = "",
    default: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Server-side apply of ``applied_obj`` by ``manager`` onto ``live_obj`` (None: create).

    Returns the merged object (without ``metadata.managedFields``: the caller stores the
    returned entries there) and the new managedFields. Raises ``ApplyConflict`` when another
    manager owns a field whose value would change and ``force`` is false. ``subresource``
    "status" applies status only; the main resource ignores status, as kube's reset fields do.

    For manager ``kubectl`` (kube's lastAppliedManager and lastAppliedUpdater): conflicts on
    fields that the last-applied annotation of a client-side apply names, with the value still
    live, are no conflicts (the applier takes them over), and when the object keeps the
    annotation it is rewritten to the applied configuration, so a later client-side apply
    computes its patch from what was really applied. ``default`` (the kind's defaulting, in
    place) fills the annotation's configuration as the server filled the object it wrote,
    so a value the server completed (an atomic list whose items got defaults) still counts as
    the annotation's.
    """
    managed = list(managed_fields or [])
    args = (live_obj, applied_obj, manager, managed, api_version, time, list_map_keys, subresource)
    try:
        merged, entries = _apply(*args, force)
    except ApplyConflict as exc:
        allowed = _taken_over_from_last_applied(
            live_obj, manager, api_version, list_map_keys, default
        )
        if allowed is None:
            raise
        remaining = [c for c in exc.conflicts if c.path not in allowed]
        if remaining:
            raise ApplyConflict(remaining) from None
        merged, entries = _apply(*args, True)
    if manager == KUBECTL:
        _keep_last_applied(merged, applied_obj)
    return merged, entries


def _taken_over_from_last_applied(
    live_obj: Mapping[str, Any] | None,
    manager: str,
    api_version: str,
    list_map_keys: MapKeys,
    default: Callable[[dict[str, Any]], None] | None,
) -> set[FieldPath] | None:
    """The fields of the last-applied annotation whose value is the live one; None when there
    is nothing to take over (another manager, no annotation, another API version)."""
    if manager != KUBECTL or not live_obj:
        return None
    annotations = (live_obj.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    types = list_types(list_map_keys)
    live = object_fields(live_obj, types)
    config = applied_config(last)
    if default is not None:
        config = copy.deepcopy(config)
        default(config)
    last_fields = object_fields(config, types)
    return {
        path
        for path, value in last_fields.items()
        if value is not MAP and path in live and _same(live[path], value)
    }


def _keep_last_applied(merged: dict[str, Any], applied_obj: Mapping[str, Any]) -> None:
    annotations = (merged.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED):
        return
    config = copy.deepcopy(dict(applied_obj))
    config_annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(config_annotations, dict):
        config_annotations.pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = go_json(config) + "\n"


def go_json(value: Any) -> str:
    """JSON as Go's encoding/json writes an unstructured object: sorted keys, compact, and
    <, >, & and the line separators escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def _apply(
    live_obj: Mapping[str, Any] | None,
    applied_obj: Mapping[str, Any],
    manager: str,
    managed_fields: list[Mapping[str, Any]],
    api_version: str,
    time: str,
    list_map_keys: MapKeys,
    subresource: str,
    force: bool,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    types = list_types(list_map_keys)
    config = applied_config(applied_obj, subresource)
    live = copy.deepcopy(dict(live_obj)) if live_obj is not None else {}
    entries = _decode_entries(managed_fields)
    live_fields = object_fields(live, types)
    if live_obj is not None and not entries and live_fields:
        # kube hands pre-existing, untracked fields to a placeholder manager on first apply.
        entries.append(
            _Entry(BEFORE_FIRST_APPLY, "Update", api_version, time, "", set(live_fields))
        )

    config_fields = applied_fields(config, types)
    mine = _Entry(manager, "Apply", api_version, time, subresource, config_fields)
    previous = next((e for e in entries if e.identity == mine.identity), None)
    others = [e for e in entries if e.identity != mine.identity]
    owned_by_others = set().union(*(e.fields for e in others))

    merged = merge_objects(live, config, types)
    if previous is not None:
        stale = previous.fields - config_fields - owned_by_others
        _prune(merged, stale, config_fields | owned_by_others, types)
    changed, removed = _diff(live_fields, object_fields(merged, types))

    conflicts = [
        Conflict(path_string(path), e.manager, e.api_version, e.operation, e.subresource, path)
        for e in others
        for path in sorted(e.fields & changed)
    ]
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    for entry in others:
        entry.fields -= changed | removed
    if previous is not None and not changed and not removed:
        mine.time = previous.time  # a no-op apply does not touch the timestamp
    metadata = merged.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return merged, _encode_entries([*others, mine])


def applied_config(applied_obj: Mapping[str, Any], subresource: str = "") -> dict[str, Any]:
    """The part of an apply body that is the manager's intent.

    Nulls are dropped, server-owned metadata is ignored (``resourceVersion`` is a precondition
    the caller checks), and the reset fields of the endpoint are removed.
    """
    config = _without_nulls(copy.deepcopy(dict(applied_obj)))
    metadata = config.get("metadata")
    if isinstance(metadata, dict):
        for name in SERVER_SET_METADATA:
            metadata.pop(name, None)
    if subresource == "status":
        identity = {k: config[k] for k in ("apiVersion", "kind") if k in config}
        if isinstance(metadata, dict):
            identity["metadata"] = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
        if "status" in config:
            identity["status"] = config["status"]
        return identity
    config.pop("status", None)
    return config


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _prune(
    obj: dict[str, Any], stale: set[FieldPath], kept: set[FieldPath], types: ListTypes
) -> None:
    """Removes fields the applier dropped from its configuration and nobody else owns."""
    kept_ancestors = {path[:i] for path in kept for i in range(1, len(path))}
    # Deepest first, and within one map-list item its key fields last: an item that has lost its
    # key can no longer be found to remove the rest (and set order must not decide that).
    for path in sorted(stale, key=lambda p: (-len(p), _is_key_field(p), p)):
        if path in kept_ancestors:
            continue  # someone still owns something below it
        item = path[:-1]
        item_survives = item not in stale or item in kept_ancestors
        if _is_key_field(path) and item_survives:
            continue  # the key fields of a surviving map-list item stay with the item
        _remove(obj, path, kept, types)


def _is_key_field(path: FieldPath) -> bool:
    return len(path) >= 2 and path[-2].startswith("k:") and path[-1][2:] in json.loads(path[-2][2:])


def _remove(obj: dict[str, Any], path: FieldPath, kept: set[FieldPath], types: ListTypes) -> None:
    trail: list[tuple[Any, Any, FieldPath]] = []  # (container, accessor, path of the child)
    node: Any = obj
    dotted = ""
    for depth, element in enumerate(path):
        if element.startswith("f:"):
            name = element[2:]
            if not isinstance(node, dict) or name not in node:
                return
            trail.append((node, name, path[: depth + 1]))
            node = node[name]
            dotted = f"{dotted}.{name}" if dotted else name
        else:
            if not isinstance(node, list):
                return
            index = next(
                (i for i, item in enumerate(node) if _item_key(types, dotted, item) == element),
                None,
            )
            if index is None:
                return
            trail.append((node, index, path[: depth + 1]))
            node = node[index]
    container, accessor, _ = trail.pop()
    del container[accessor]
    # Maps and lists emptied by pruning go too, except the roots (spec, metadata, ...) and
    # anything still owned as a value of its own.
    while len(trail) > 1:
        container, accessor, child_path = trail.pop()
        emptied = container[accessor]
        if emptied or child_path in kept or child_path == ("f:metadata",):
            return
        del container[accessor]


def _item_key(types: ListTypes, dotted: str, item: Any) -> str | None:
    try:
        return types.item_key(dotted, item)
    except TypeError:
        return None
