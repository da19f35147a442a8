"""The controller's event recorder: core/v1 Events about the runtimes it reconciles.

kube's ``record.EventRecorder`` with its ``EventCorrelator``, in-process: an event about an
object is keyed by what kube's correlator keys on (the reporting component, the object, type,
reason and message), and that key names the Event (``<object>.<16 hex>``), so a repeat finds
its predecessor and counts up (``count``, ``lastTimestamp``, and ``series`` from the second
occurrence on) instead of writing another object. Writes go through the store as the
controller's own; the API serves Events read-only (`runtimes.registry.kinds.EVENTS`).
"""

from __future__ import annotations

import hashlib
import logging
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings

from runtimes.accounts.access import may_write_status
from runtimes.accounts.serviceaccounts import ServiceAccount
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.registry.event.schema import MAX_MESSAGE, MAX_REASON
from runtimes.registry.kinds import EVENTS
from runtimes.storage import store

# Retention is bounded twice, as kube bounds it with etcd's one-hour event TTL: an Event not
# renewed for ``NODUS_EVENTS_TTL_SECONDS`` (3600) is deleted by `expire` (the loop calls it every
# minute, and a record that finds its namespace full sweeps it), and a namespace never holds
# more than ``NODUS_EVENTS_PER_NAMESPACE`` (1000): recording one more deletes the least recently
# seen tenth of them, so the namespace is read and parsed once per tenth of the cap recorded, not
# once per event (at 1,000 that was every create's reconcile, once the project was full).

log = logging.getLogger("nodus.controller")

COMPONENT = "nodus.dev/runtime-controller"
NORMAL = "Normal"
WARNING = "Warning"
TTL_SECONDS = 3600.0
PER_NAMESPACE = 1000


def _seconds(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parsed(text: Any) -> datetime | None:
    if not isinstance(text, str) or len(text) < 19:
        return None
    try:
        return datetime.fromisoformat(text[:19]).replace(tzinfo=UTC)
    except ValueError:
        return None


def last_seen(event: Obj) -> datetime | None:
    """When the event last happened: its series' last observation, else lastTimestamp."""
    series = event.get("series")
    if isinstance(series, dict) and (at := _parsed(series.get("lastObservedTime"))):
        return at
    return _parsed(event.get("lastTimestamp")) or _parsed(event.get("eventTime"))


def reference(obj: Obj) -> Obj:
    """The involvedObject for `obj`: kube's ObjectReference, as ``ref.GetReference`` fills it."""
    meta = obj["metadata"]
    return {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def event_name(involved: Obj, type_: str, reason: str, message: str) -> str:
    """The correlator's key as a name: the object's name, then 16 hex of the key's digest."""
    key = "\x00".join(
        [
            COMPONENT,
            involved["kind"],
            involved["namespace"],
            involved["name"],
            involved["uid"],
            involved["apiVersion"],
            type_,
            reason,
            message,
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{involved['name'][: 253 - 17]}.{digest}"


class EventRecorder:
    """Records, counts and expires the controller's events; `now` is the clock (tests move it)."""

    def __init__(
        self,
        account: ServiceAccount | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        ttl_seconds: float | None = None,
        per_namespace: int | None = None,
    ) -> None:
        self.account = account or ServiceAccount()
        self.now = now
        self.ttl = timedelta(
            seconds=ttl_seconds
            if ttl_seconds is not None
            else float(settings.NODUS_EVENTS_TTL_SECONDS)
        )
        self.per_namespace = max(
            1,
            per_namespace
            if per_namespace is not None
            else int(settings.NODUS_EVENTS_PER_NAMESPACE),
        )
        self.instance = socket.gethostname()[:128]

    def record(self, obj: Obj, type_: str, reason: str, message: str) -> Obj | None:
        """Records one occurrence about `obj`; returns the Event as stored (None if refused).

        Never raises for the store's sake: an event is best-effort, as in kube, and must not
        fail the reconcile that reports it.
        """
        involved = reference(obj)
        if not may_write_status(self.account.user()):
            log.warning(
                "not recording %s about %s/%s: the controller's account may not write",
                reason,
                involved["namespace"],
                involved["name"],
            )
            return None
        namespace = involved["namespace"]
        reason = reason[:MAX_REASON]
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
        name = event_name(involved, type_, reason, message)
        now = self.now()
        try:
            self._make_room(namespace, keep=name)
            return self._write(namespace, name, involved, type_, reason, message, now)
        except Exception:  # a lost event is logged; the reconcile it reports goes on
            log.exception("recording %s about %s/%s failed", reason, namespace, involved["name"])
            return None

    def _write(
        self,
        namespace: str,
        name: str,
        involved: Obj,
        type_: str,
        reason: str,
        message: str,
        now: datetime,
    ) -> Obj:
        fresh: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": COMPONENT},
            "firstTimestamp": _seconds(now),
            "lastTimestamp": _seconds(now),
            "count": 1,
            "eventTime": _micro(now),
            "action": "Reconcile",
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
        }
        try:
            return store.create(EVENTS, namespace, fresh).object
        except errors.ApiError as exc:
            if exc.reason != "AlreadyExists":
                raise

        def repeat(current: Obj) -> Obj:
            seen = last_seen(current)
            if seen is None or now - seen > self.ttl:
                # Expired but not yet swept: this is a new first occurrence.
                fresh["metadata"] = current["metadata"]
                return fresh
            count = int(current.get("count") or 1) + 1
            current["count"] = count
            current["lastTimestamp"] = _seconds(now)
            current["involvedObject"] = involved
            current["series"] = {"count": count, "lastObservedTime": _micro(now)}
            return current

        return store.mutate(EVENTS, namespace, name, repeat).object

    def _make_room(self, namespace: str, keep: str) -> None:
        """At the cap, deletes the namespace's expired events and then the least recently seen,
        down to nine tenths of the cap (at least one below it).

        Below the cap this is one indexed count: reading and parsing every event of the
        namespace for each one recorded made a burst of reconciles cost the square of the
        namespace's events. Expired events below the cap wait for `expire` (every minute)."""
        if store.count(EVENTS, namespace) < self.per_namespace:
            return
        room = max(1, self.per_namespace // 10)
        events, _revision = store.list_objects(EVENTS, namespace)
        cutoff = self.now() - self.ttl
        alive: list[tuple[datetime, str]] = []
        for event in events:
            name = event["metadata"]["name"]
            seen = last_seen(event) or datetime.min.replace(tzinfo=UTC)
            if seen < cutoff:
                self._delete(namespace, name)
            elif name != keep:
                alive.append((seen, name))
        alive.sort()
        for _seen, name in alive[: max(0, len(alive) - self.per_namespace + room)]:
            self._delete(namespace, name)

    def expire(self) -> int:
        """Deletes every event not seen for the TTL, in every namespace; returns how many."""
        events, _revision = store.list_objects(EVENTS)
        cutoff = self.now() - self.ttl
        gone = 0
        for event in events:
            seen = last_seen(event)
            if seen is None or seen < cutoff:
                meta = event["metadata"]
                gone += self._delete(meta["namespace"], meta["name"])
        return gone

    @staticmethod
    def _delete(namespace: str, name: str) -> int:
        try:
            store.delete(EVENTS, namespace, name)
        except errors.ApiError as exc:
            if exc.reason != "NotFound":
                raise
            return 0
        return 1
