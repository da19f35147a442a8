"""core/v1 Events: validation and kube's own printer columns.

Events are written by nodus's controller (`runtimes.controller.recorder`) and read by anyone who
may read the project they are in; through the API they are read-only. The rules are the ones
kube's `ValidateEvent` applies to what a recorder writes: an involvedObject with a kind and a
name in the event's own namespace, a type of Normal or Warning, and kube's length limits.
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.durations import human_age
from runtimes.apimachinery.fielderrors import FieldError, invalid, not_supported, required
from runtimes.apimachinery.meta import Obj
from runtimes.registry.event.schema import MAX_REASON, TYPES
from runtimes.registry.strategy import Strategy


class EventStrategy(Strategy):
    """Events have no spec or status: the whole object is what the recorder wrote."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Keeps everything: an Event's fields sit at the top level, not under status."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Keeps everything, as kube's eventStrategy does."""

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]:
        problems: list[FieldError] = []
        involved = obj.get("involvedObject")
        namespace = obj.get("metadata", {}).get("namespace", "")
        if not isinstance(involved, dict):
            return [required("involvedObject")]
        for key in ("kind", "name"):
            if not involved.get(key):
                problems.append(required(f"involvedObject.{key}"))
        if involved.get("namespace") not in (None, "", namespace):  # "": cluster-scoped
            problems.append(
                invalid(
                    "involvedObject.namespace",
                    involved.get("namespace"),
                    "does not match event.namespace",
                )
            )
        if obj.get("type") not in TYPES:
            problems.append(not_supported("type", obj.get("type"), list(TYPES)))
        reason = obj.get("reason") or ""
        if not isinstance(reason, str) or len(reason) > MAX_REASON:
            problems.append(invalid("reason", reason, f"can have at most {MAX_REASON} characters"))
        return problems


def _first_seen(obj: Obj) -> str:
    return human_age(obj.get("firstTimestamp") or _micro(obj.get("eventTime")))


def _last_seen(obj: Obj) -> str:
    series = obj.get("series")
    if isinstance(series, dict) and series.get("lastObservedTime"):
        return human_age(_micro(series["lastObservedTime"]))
    last = obj.get("lastTimestamp")
    return human_age(last) if last else _first_seen(obj)


def _micro(timestamp: Any) -> str | None:
    """A MicroTime (2026-01-01T00:00:00.000000Z) at second precision, for `human_age`."""
    if not isinstance(timestamp, str) or len(timestamp) < 19:
        return None
    return timestamp[:19] + "Z"


def _count(obj: Obj) -> int:
    series = obj.get("series")
    if isinstance(series, dict) and series.get("count"):
        return int(series["count"])
    return int(obj.get("count") or 1)  # a singleton event of the new API sets no count


def _object(obj: Obj) -> str:
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def _source(obj: Obj) -> str:
    """kube's formatEventSource: the component (or reporting controller), then the host."""
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    return f"{component}, {host}" if host else str(component)


def _text(path: str) -> Any:
    return lambda obj: obj.get(path) or ""


# kube's eventColumnDefinitions and printEvent, cell for cell (no Name-first, Age-last frame).
COLUMNS = (
    (
        "Last Seen",
        "string",
        "The time at which the most recent occurrence was recorded.",
        0,
        _last_seen,
    ),
    ("Type", "string", "Type of this event (Normal, Warning).", 0, _text("type")),
    ("Reason", "string", "Why the event happened, short and machine-readable.", 0, _text("reason")),
    ("Object", "string", "The object that this event is about.", 0, _object),
    (
        "Subobject",
        "string",
        "The part of the object the event is about, if any.",
        1,
        lambda obj: (obj.get("involvedObject") or {}).get("fieldPath", ""),
    ),
    ("Source", "string", "The component reporting this event.", 1, _source),
    (
        "Message",
        "string",
        "A human-readable description of the event.",
        0,
        lambda obj: str(obj.get("message") or "").strip(),
    ),
    ("First Seen", "string", "The time at which the event was first recorded.", 1, _first_seen),
    ("Count", "string", "The number of times this event has occurred.", 1, _count),
    (
        "Name",
        "string",
        "Name must be unique within a namespace.",
        1,
        lambda obj: obj["metadata"].get("name", ""),
    ),
)

STRATEGY = EventStrategy()
