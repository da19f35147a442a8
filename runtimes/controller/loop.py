"""The controller loop: level-triggered reconciles fed by an informer, with resync and backoff.

An informer (``runtimes.watch.informer``) lists every runtime, then follows the hub from the
list's revision, re-listing when that revision has been compacted away (410); its handlers put
keys on a ``WorkQueue``, and every ``resync_seconds`` it hands every runtime over again for a
fresh inspection. The controller never reads the event-log tables itself (an import-linter
contract holds that line). Worker threads take keys from the queue: per-key dedupe,
exponential backoff for transient trouble. Starting up lists every runtime, so whatever a
previous controller left half done is finished.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections, connection

from runtimes.accounts import audit
from runtimes.accounts.access import CONTROLLER_ACCOUNT
from runtimes.apimachinery.meta import Obj
from runtimes.controller import settings as controller_settings
from runtimes.controller.garbagecollector import GarbageCollector
from runtimes.controller.jobs import JobReconciler, job_type
from runtimes.controller.leader import lead, lock_for
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.reconcile import Outcome, Reconciler, identity, runtime_type
from runtimes.controller.settings import ControllerSettings, TrustedKeys
from runtimes.controller.workers import run_worker
from runtimes.controller.workqueue import WorkQueue
from runtimes.registry.kinds import stored_kinds
from runtimes.registry.trainingjob.admission import runtime_key
from runtimes.storage import actor, store
from runtimes.watch.informer import Handlers, Informer, Key, key_of

# Bounded work, so a backlog never crowds out the API it shares a process with:
#
# - ``workers`` (``NODUS_CONTROLLER_WORKERS``, default 2) reconciles at once, each on its own
#   thread with its own database connection, never a request thread's;
# - transient trouble (a registry that is down) is retried per runtime after 1, 2, 4 ... seconds
#   up to 5 minutes (``NODUS_CONTROLLER_BACKOFF_SECONDS``, ``..._BACKOFF_MAX_SECONDS``), each
#   delay shortened by a random quarter at most (``..._BACKOFF_JITTER``), so runtimes that failed
#   together do not come back together;
# - the echo of our own status write (a change that leaves uid, generation and image alone)
#   does not bring back a runtime that is already held or waiting out its backoff;
# - the workers together use at most ``cpu_share`` of one core (``NODUS_CONTROLLER_CPU_SHARE``,
#   default 0.2; ``runtimes.controller.pacing``), resting after each reconcile in proportion to
#   the CPU it used. Every worker thread below runs the same loop (``runtimes.controller.workers``)
#   and is paced alike.
#
# The same informers (one per served kind) feed the garbage collector
# (``runtimes.controller.garbagecollector``): its own queue and ``workers`` threads, paced alike,
# delete dependents whose owners are gone and finish foreground and orphaning deletions. It runs
# only where the reconcile loop runs: on the leader.
#
# The same controller runs the job controller (``runtimes.controller.jobs``): the TrainingJobs'
# informer (one of the above) also feeds a queue of their own, worked by one more paced thread
# (a worker's share), and every change the runtime informer sees (a runtime turning Ready, moving
# to a new generation, going away) queues the jobs that name that runtime. Jobs read their runtime
# from the runtime informer's cache, the one the runtime controller keeps, falling back to the
# store for one it has not seen yet.
#
# ``start_in_process()`` runs it as a daemon thread beside the web server (the embedded default);
# ``manage.py runcontroller`` runs it alone, one leader at a time (``leader``).

log = logging.getLogger("nodus.controller")

CONNECTION_CHECK_SECONDS = 60.0
# How often expired Events are deleted (their TTL is an hour: a minute late is nothing).
EVENT_SWEEP_SECONDS = 60.0


# The controller writes through the store, not the API: its writes are recorded in the event
# log under its account and audited as they commit (no request middleware sees them).
_VERBS = {"ADDED": "create", "MODIFIED": "update", "DELETED": "delete"}


def _audited(kind: str, plural: str, group: str, version: str, namespace: str, name: str) -> None:
    ref = audit.object_ref(plural, namespace, name, group, version, "")
    audit.record_write(_VERBS.get(kind, kind.lower()), ref)


CONTROLLER = actor.Actor(CONTROLLER_ACCOUNT, on_write=_audited)


def _as_controller(target: Callable[..., None]) -> Callable[..., None]:
    """`target` run on a thread that writes as the controller (a new thread starts with an
    empty context, so the actor is set inside it)."""

    def run(*args: object) -> None:
        actor.set_for_thread(CONTROLLER)
        target(*args)

    return run


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
        self.collector = GarbageCollector(
            stored_kinds(),
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            jitter=self.config.backoff_jitter,
        )
        # One informer per served kind feeds the garbage collector's graph; the runtimes' one
        # also feeds the reconcile queue (one list and one watch per kind, shared).
        self.job_queue: WorkQueue[Key] = WorkQueue(
            backoff_base=self.config.backoff_base,
            backoff_max=self.config.backoff_max,
            jitter=self.config.backoff_jitter,
        )
        self.jobs = JobReconciler(self._runtime)
        # runtime key -> the keys of the jobs that name it, kept by the job informer's thread
        # and read by the runtime informer's.
        self._jobs_of: dict[Key, set[Key]] = {}
        self._runtime_of: dict[Key, Key] = {}
        self._index_lock = threading.Lock()
        runtimes, jobs = runtime_type(), job_type()
        own = {
            runtimes: Handlers(
                on_add=self._added, on_update=self._updated, on_delete=self._deleted
            ),
            jobs: Handlers(
                on_add=self._job_seen, on_update=self._job_updated, on_delete=self._job_gone
            ),
        }
        self.informers = [
            Informer(
                rt,
                both(own[rt], self.collector.handlers(rt))
                if rt in own
                else self.collector.handlers(rt),
                resync_seconds=self.config.resync_seconds,
            )
            for rt in stored_kinds()
        ]
        self.informer = next(i for i in self.informers if i.kind is runtimes)
        self.job_informer = next(i for i in self.informers if i.kind is jobs)
        self.collector.informers = self.informers
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
        jobs, _revision = store.list_objects(job_type())
        for job in jobs:
            self.jobs.reconcile(job["metadata"]["namespace"], job["metadata"]["name"])
        return outcomes

    # -- the loop ---------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Runs until ``stop`` is set, then drains nothing further and returns."""
        threads = [
            threading.Thread(
                target=informer.run,
                args=(stop, self.config.poll_seconds),
                name=f"controller-informer-{informer.kind.key}",
            )
            for informer in self.informers
        ]
        threads += [
            threading.Thread(target=_as_controller(self._work), name=f"controller-worker-{n}")
            for n in range(self.workers)
        ]
        threads += [
            threading.Thread(target=_as_controller(self._collect), name=f"controller-gc-{n}")
            for n in range(self.workers)
        ]
        threads.append(
            threading.Thread(target=_as_controller(self._work_jobs), name="controller-job-worker")
        )
        threads.append(
            threading.Thread(
                target=_as_controller(self._expire_events), args=(stop,), name="controller-events"
            )
        )
        try:
            for thread in threads:
                thread.daemon = True
                thread.start()
            stop.wait()
        finally:
            self._stopping.set()
            for informer in self.informers:
                informer.close()
            self.queue.shut_down()
            self.collector.queue.shut_down()
            self.job_queue.shut_down()
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=30)
            self.sources.close()
            connection.close()

    # -- the informer's handlers (on its thread) -----------------------------------------------

    def _added(self, obj: Obj) -> None:
        self._queue_jobs_of(key_of(obj))
        self.queue.add(key_of(obj))

    def _updated(self, old: Obj, new: Obj) -> None:
        key = key_of(new)
        self._queue_jobs_of(key)
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
        self._queue_jobs_of(key)
        self.reconciler.forget(*key)
        self.queue.forget(key)
        self.queue.add(key)  # its reconcile finds it gone and lets go of it

    def _collect(self) -> None:
        keeper = ConnectionKeeper()
        try:
            share = min(1.0, self.config.cpu_share / self.workers)
            self.collector.work(self._stopping, share, keeper.refresh)
        finally:
            connection.close()

    # -- jobs ------------------------------------------------------------------------------------

    def _runtime(self, namespace: str, name: str) -> Obj | None:
        """A job's runtime: from the runtime informer's cache, else (not seen yet) the store."""
        cached = self.informer.get((namespace, name))
        if cached is not None:
            return cached
        try:
            return store.get(runtime_type(), namespace, name)
        except Exception:  # NotFound, mostly; a database error is the same "not now"
            return None

    def _queue_jobs_of(self, runtime: Key) -> None:
        with self._index_lock:
            keys = list(self._jobs_of.get(runtime, ()))
        for key in keys:
            self.job_queue.add(key)

    def _job_seen(self, job: Obj) -> None:
        key = key_of(job)
        runtime = runtime_key(job)
        with self._index_lock:
            previous = self._runtime_of.pop(key, None)
            if previous is not None:
                self._jobs_of.get(previous, set()).discard(key)
            if runtime is not None:
                self._runtime_of[key] = runtime
                self._jobs_of.setdefault(runtime, set()).add(key)
        self.job_queue.add(key)

    def _job_updated(self, _old: Obj, new: Obj) -> None:
        self._job_seen(new)

    def _job_gone(self, job: Obj) -> None:
        key = key_of(job)
        with self._index_lock:
            runtime = self._runtime_of.pop(key, None)
            if runtime is not None:
                jobs = self._jobs_of.get(runtime, set())
                jobs.discard(key)
                if not jobs:
                    self._jobs_of.pop(runtime, None)
        self.job_queue.forget(key)

    def _work_jobs(self) -> None:
        def handle(key: tuple[str, str]) -> None:
            self.jobs.reconcile(*key)
            self.job_queue.forget(key)

        self._run_worker(self.job_queue, handle, lambda key: f"job {key[0]}/{key[1]}: reconcile")

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
        def handle(key: tuple[str, str]) -> None:
            outcome = self.reconciler.reconcile(*key)
            if outcome.transient:
                assert outcome.verdict is not None
                delay = self.queue.add_rate_limited(key, outcome.verdict.retry_after)
                log.info("%s/%s: %s; retrying in %.1fs", *key, outcome.verdict.reason, delay)
            else:
                self.queue.forget(key)

        self._run_worker(self.queue, handle, lambda key: f"{key[0]}/{key[1]}: reconcile", self.idle)

    def _run_worker(
        self,
        queue: WorkQueue[tuple[str, str]],
        handle: Callable[[tuple[str, str]], None],
        describe: Callable[[tuple[str, str]], str],
        idle: threading.Event | None = None,
    ) -> None:
        """One worker thread of this controller: its own database connection, a worker's
        share of the CPU (``runtimes.controller.workers``)."""
        keeper = ConnectionKeeper()
        try:
            run_worker(
                queue,
                handle,
                share=min(1.0, self.config.cpu_share / self.workers),
                stopping=self._stopping,
                keep=keeper.refresh,
                describe=describe,
                idle=idle,
            )
        finally:
            connection.close()


def both(first: Handlers, second: Handlers) -> Handlers:
    """Handlers that call `first`'s, then `second`'s."""

    def add(obj: Obj) -> None:
        try:
            first.on_add(obj)
        finally:
            second.on_add(obj)

    def update(old: Obj, new: Obj) -> None:
        try:
            first.on_update(old, new)
        finally:
            second.on_update(old, new)

    def delete(obj: Obj) -> None:
        try:
            first.on_delete(obj)
        finally:
            second.on_delete(obj)

    return Handlers(on_add=add, on_update=update, on_delete=delete)


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
