"""The controller loop: level-triggered reconciles fed by an informer, with resync and backoff.

An informer (``runtimes.watch.informer``) lists every runtime, then follows the hub from the
list's revision, re-listing when that revision has been compacted away (410); its handlers put
keys on a ``WorkQueue``, and every ``resync_seconds`` it hands every runtime over again for a
fresh inspection. The controller never reads the event-log tables itself (an import-linter
contract holds that line). Worker threads take keys from the queue: per-key dedupe,
exponential backoff for transient trouble. Starting up lists every runtime, so whatever a
previous controller left half done is finished.

Bounded work, so a backlog never crowds out the API it shares a process with:

- ``workers`` (``NODUS_CONTROLLER_WORKERS``, default 2) reconciles at once, each on its own
  thread with its own database connection, never a request thread's;
- transient trouble (a registry that is down) is retried per runtime after 1, 2, 4 ... seconds
  up to 5 minutes (``NODUS_CONTROLLER_BACKOFF_SECONDS``, ``..._BACKOFF_MAX_SECONDS``), each
  delay shortened by a random quarter at most (``..._BACKOFF_JITTER``), so runtimes that failed
  together do not come back together;
- the echo of our own status write (a change that leaves uid, generation and image alone)
  does not bring back a runtime that is already held or waiting out its backoff;
- the workers together use at most ``cpu_share`` of one core (``NODUS_CONTROLLER_CPU_SHARE``,
  default 0.2; ``runtimes.controller.pacing``), resting after each reconcile in proportion to
  the CPU it used.

``start_in_process()`` runs it as a daemon thread beside the web server (the embedded default);
``manage.py runcontroller`` runs it alone, one leader at a time (``leader``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections, connection

from runtimes.apimachinery.meta import Obj
from runtimes.controller import settings as controller_settings
from runtimes.controller.leader import lead, lock_for
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.pacing import CpuPacer
from runtimes.controller.reconcile import Outcome, Reconciler, identity, runtime_type
from runtimes.controller.settings import ControllerSettings, TrustedKeys
from runtimes.controller.workqueue import WorkQueue
from runtimes.storage import store
from runtimes.watch.informer import Handlers, Informer, Key, key_of

log = logging.getLogger("nodus.controller")

CONNECTION_CHECK_SECONDS = 60.0
# How often expired Events are deleted (their TTL is an hour: a minute late is nothing).
EVENT_SWEEP_SECONDS = 60.0


class ConnectionKeeper:
    """Keeps one thread's database connection across reconciles, dropping it when it breaks.

    ``close_old_connections`` before every unit of work would, with CONN_MAX_AGE=0, open a new
    PostgreSQL connection per reconcile (tens of milliseconds each). A controller thread lives
    for hours, so it keeps its connection, and lets Django close it after an error or once a
    minute (so a restarted database or a changed CONN_MAX_AGE is picked up).
    """

    def __init__(self) -> None:
        self._checked = time.monotonic()

    def refresh(self, *, failed: bool = False) -> None:
        if failed or time.monotonic() - self._checked >= CONNECTION_CHECK_SECONDS:
            self._checked = time.monotonic()
            close_old_connections()


class Controller:
    def __init__(
        self,
        config: ControllerSettings | None = None,
        *,
        reconciler: Reconciler | None = None,
        workers: int | None = None,
    ) -> None:
        self.config = config or controller_settings.from_django()
        self.sources = ImageSources(self.config.layout_root, self.config.registry)
        self.keys = TrustedKeys(self.config.trusted_key_paths)
        self.reconciler = reconciler or Reconciler(self.sources, self.keys.current)
        self.workers = max(1, workers or self.config.workers)
        self.queue: WorkQueue[Key] = WorkQueue(
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            jitter=self.config.backoff_jitter,
        )
        self.informer = Informer(
            runtime_type(),
            Handlers(on_add=self._added, on_update=self._updated, on_delete=self._deleted),
            resync_seconds=self.config.resync_seconds,
        )
        self.idle = threading.Event()  # set whenever the queue has drained (tests wait on it)
        self._stopping = threading.Event()  # ends a worker's rest at once

    # -- one pass, no threads (tests, `runcontroller --once`) -----------------------------------

    def sync_once(self) -> dict[Key, Outcome]:
        """Reconciles every runtime once, in this thread; returns each outcome."""
        objects, _revision = store.list_objects(runtime_type())
        outcomes: dict[Key, Outcome] = {}
        for obj in objects:
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            outcomes[key] = self.reconciler.reconcile(*key)
        return outcomes

    # -- the loop ---------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Runs until ``stop`` is set, then drains nothing further and returns."""
        threads = [
            threading.Thread(
                target=self.informer.run,
                args=(stop, self.config.poll_seconds),
                name="controller-informer",
            )
        ]
        threads += [
            threading.Thread(target=self._work, name=f"controller-worker-{n}")
            for n in range(self.workers)
        ]
        threads.append(
            threading.Thread(target=self._expire_events, args=(stop,), name="controller-events")
        )
        try:
            for thread in threads:
                thread.daemon = True
                thread.start()
            stop.wait()
        finally:
            self._stopping.set()
            self.informer.close()
            self.queue.shut_down()
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=30)
            self.sources.close()
            connection.close()

    # -- the informer's handlers (on its thread) -----------------------------------------------

    def _added(self, obj: Obj) -> None:
        self.queue.add(key_of(obj))

    def _updated(self, old: Obj, new: Obj) -> None:
        key = key_of(new)
        if old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            # A resync (or a re-list of an unchanged runtime): inspect afresh, so a signature
            # or an image removed since the last verdict is noticed.
            self.reconciler.forget(*key)
        elif identity(old) == identity(new) and self.queue.pending(key):
            # Status or labels moved (mostly our own status write coming back), nothing a
            # verdict depends on, and the key will be looked at anyway: by the worker holding
            # it, or when its backoff ends. Adding it now would skip that backoff.
            return
        self.queue.add(key)

    def _deleted(self, obj: Obj) -> None:
        key = key_of(obj)
        self.reconciler.forget(*key)
        self.queue.forget(key)
        self.queue.add(key)  # its reconcile finds it gone and lets go of it

    def _expire_events(self, stop: threading.Event) -> None:
        """Deletes expired Events every minute (the recorder also sweeps as it records)."""
        keeper = ConnectionKeeper()
        failed = False
        try:
            while not stop.wait(EVENT_SWEEP_SECONDS):
                try:
                    keeper.refresh(failed=failed)
                    failed = False
                    self.reconciler.recorder.expire()
                except Exception:
                    failed = True
                    log.exception("expiring events failed; trying again in a minute")
        finally:
            connection.close()

    def _work(self) -> None:
        keeper = ConnectionKeeper()
        pacer = CpuPacer(min(1.0, self.config.cpu_share / self.workers))
        failed = False
        try:
            while True:
                key = self.queue.get(timeout=0.5)
                if key is None:
                    if self.queue.shutting_down:
                        return
                    if not len(self.queue):
                        self.idle.set()
                    continue
                self.idle.clear()
                started = pacer.start()
                try:
                    keeper.refresh(failed=failed)
                    failed = False
                    outcome = self.reconciler.reconcile(*key)
                    if outcome.transient:
                        assert outcome.verdict is not None
                        delay = self.queue.add_rate_limited(key, outcome.verdict.retry_after)
                        reason = outcome.verdict.reason
                        log.info("%s/%s: %s; retrying in %.1fs", *key, reason, delay)
                    else:
                        self.queue.forget(key)
                except Exception:
                    failed = True
                    delay = self.queue.add_rate_limited(key)
                    log.exception("%s/%s: reconcile failed; retrying in %.1fs", *key, delay)
                finally:
                    self.queue.done(key)
                    pacer.worked(started)
                pacer.rest(self._stopping)
        finally:
            connection.close()


def run_with_leader_election(
    stop: threading.Event,
    *,
    config: ControllerSettings | None = None,
    workers: int | None = None,
    on_change: Callable[[bool], None] | None = None,
) -> None:
    """Waits for the leader lock, runs a controller while holding it, until ``stop``."""
    from django.db import connections

    config = config or controller_settings.from_django()

    def work(resign: threading.Event) -> None:
        Controller(config, workers=workers).run(resign)

    lock = lock_for(connections["default"].settings_dict, config.lock_path)
    lead(lock, work, stop, retry_seconds=config.leader_retry_seconds, on_change=on_change)


_embedded: tuple[threading.Thread, threading.Event] | None = None


def start_in_process() -> threading.Thread:
    """Starts the controller in a daemon thread of this process (the embedded default)."""
    global _embedded
    if _embedded is not None and _embedded[0].is_alive():
        return _embedded[0]
    stop = threading.Event()

    def announce(leading: bool) -> None:
        log.info("controller: %s", "leading" if leading else "stood down")

    thread = threading.Thread(
        target=run_with_leader_election,
        args=(stop,),
        kwargs={"on_change": announce},
        name="nodus-controller",
        daemon=True,
    )
    thread.start()
    _embedded = (thread, stop)
    return thread


def stop_in_process(timeout: float = 10.0) -> None:
    global _embedded
    if _embedded is not None:
        thread, stop = _embedded
        stop.set()
        thread.join(timeout)
        _embedded = None
