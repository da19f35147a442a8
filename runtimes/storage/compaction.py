"""Compaction of the event log: keep the last `NODUS_EVENT_WINDOW` revisions, forget the rest.

`RevisionCounter.compacted` is the oldest revision the log still holds (the "floor"). Anything
that needs the history after revision R (a watch resuming from R, a continue token or an
Exact list at R) works only while R >= floor - 1; older requests answer 410 Expired, as
kube-apiserver does after etcd compaction, and clients re-list.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import transaction

from runtimes.apimachinery import errors
from runtimes.storage.models import Event, RevisionCounter, read_counter

# Compaction has one owner: `after_commit`, a `runtimes.storage.events` listener (subscribed when
# the app loads). The log grows only by commits, and every commit passes through it, so checking
# there bounds the log in every process that writes: a worker without a hub, a lone controller, a
# script. The hub's dispatcher, the other candidate, runs only where something watches, and
# deleting on that thread would hold up every watcher's delivery. Readers of the log read their
# rows first and the floor after (`eventlog.read_log`, `snapshots`, the hub's pull): the floor is
# raised before any row goes, so a reader racing a compaction sees the raised floor.

log = logging.getLogger("nodus.compaction")

# Deleting in batches keeps each transaction (and the writers waiting behind it) short.
BATCH = 5_000


def floor() -> int:
    """The oldest revision the event log still holds."""
    return read_counter()[1]


def oldest_resumable() -> int:
    """The lowest resourceVersion a watch or a snapshot can still start after."""
    return max(floor() - 1, 0)


def window() -> int:
    return max(int(settings.NODUS_EVENT_WINDOW), 1)


def is_expired(revision: int) -> bool:
    return revision < floor() - 1


def too_old(revision: int, oldest: int) -> errors.ApiError:
    """The Status a watch ends with when its start point has been compacted away."""
    return errors.ApiError(
        "Expired",
        f"too old resource version: {revision} ({oldest})",
        fix="List again without resourceVersion and watch from the list's resourceVersion "
        "(client-go and the Python client do this on their own).",
    )


def due(current: int, keep: int | None = None) -> bool:
    """Whether the log has grown a tenth past its window (so compaction runs in steps)."""
    keep = window() if keep is None else keep
    oldest = max(floor(), 1)  # revisions start at 1
    return current - oldest + 1 > keep + max(keep // 10, 1)


def compact(keep: int | None = None) -> int:
    """Deletes events older than the window; returns the new floor.

    Safe to run from several processes at once: deletes are idempotent and the floor only
    moves forward. The floor is raised *before* any row goes, and readers check the floor
    after reading rows, so a reader either saw every row or sees the raised floor (410).
    """
    keep = window() if keep is None else keep
    current, compacted = read_counter()
    target = current - keep + 1
    if target <= compacted:
        return compacted
    RevisionCounter.objects.filter(pk=1, compacted__lt=target).update(compacted=target)
    while True:
        with transaction.atomic():
            doomed = list(
                Event.objects.filter(revision__lt=target)
                .order_by("revision")
                .values_list("revision", flat=True)[:BATCH]
            )
            if not doomed:
                break
            Event.objects.filter(revision__lte=doomed[-1]).delete()
    log.info("compacted the event log below revision %s", target)
    return target


# A committing process checks whether the log is due for compaction once every tenth of the
# window (but at least every CHECK_EVERY revisions, and at most every MIN_CHECK_EVERY), so the
# log stays within about a fifth past its window without a query per commit.
CHECK_EVERY = 256
MIN_CHECK_EVERY = 8
_running = threading.Lock()


def check_every() -> int:
    return min(CHECK_EVERY, max(window() // 10, MIN_CHECK_EVERY))


def after_commit(revision: int) -> None:
    """A `runtimes.storage.events` listener: now and then, compact on a short-lived background
    thread."""
    if revision % check_every() or not _running.acquire(blocking=False):
        return

    def run() -> None:
        from django.db import close_old_connections, connection

        try:
            close_old_connections()
            if due(revision):
                compact()
        except Exception:  # compaction is housekeeping: the next check retries
            log.warning("event log compaction failed", exc_info=True)
        finally:
            if not connection.in_atomic_block:
                connection.close()
            _running.release()

    threading.Thread(target=run, name="nodus-compaction", daemon=True).start()
