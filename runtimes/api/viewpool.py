"""Sync views on a pool of long-lived threads that keep their database connections."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.response import SimpleTemplateResponse
from rest_framework.response import Response

from runtimes.api.fairqueuing import give_way, give_way_on_thread

# Django runs a sync view from its async handler on a thread made for that one request
# (`ThreadSensitiveContext`), opens a database connection on it, closes it at the end, and hops to
# another such thread to render the response. For a GET that is most of its time. API views run
# here instead: `pooled(view)` is an async view that runs the whole sync view, rendering
# included, on one of a fixed set of threads, each keeping its connection open between requests
# (SQLite: `CONN_MAX_AGE`; PostgreSQL: psycopg's pool), checked before and after every request as
# Django's request signals would (`close_old_connections`: a broken connection or one past its
# age is replaced). The response handed back is already rendered, so Django has nothing left to
# run on a thread.
#
# The pool has as many threads as the seats of runtimes.api.flowcontrol's list and other pools
# let requests run at once (`NODUS_VIEW_THREADS`, default 24): a request with a seat never waits
# long for a thread. A watch's set-up (its caller, its authorization, its plan: `run`) has
# threads of its own: a herd of a thousand watches, each holding a watch seat, queued its
# set-ups ahead of every list on one pool, and the lists' seats were held waiting for a thread
# while the process's other lists were refused 429.
STREAM_SETUP_THREADS = 4


class _Pool(ThreadPoolExecutor):
    """A thread pool that starts all its threads at its first task and keeps them.

    `ThreadPoolExecutor` starts a thread whenever a task comes and none of its threads has yet
    said it is idle, which a thread says only after its last task's caller has been handed the
    result: one client's requests one after another, each sent as soon as the last was answered,
    started a new thread now and then until the pool was full. Here the first task fills the pool
    at once (its threads meet at a barrier), so a request never waits for a thread to start.
    """

    def __init__(self, threads: int, name: str) -> None:
        super().__init__(max_workers=threads, thread_name_prefix=name)
        self._threads_wanted = threads
        self._filling = threading.Lock()
        self._filled = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if not self._filled:
            self._fill()
        return super().submit(fn, *args, **kwargs)

    def _fill(self) -> None:
        with self._filling:
            if self._filled:
                return
            meeting = threading.Barrier(self._threads_wanted)
            for _ in range(self._threads_wanted):
                super().submit(_meet, meeting)
            self._filled = True


def _meet(meeting: threading.Barrier) -> None:
    # A thread that could not start breaks the meeting: the pool still serves with the others.
    with contextlib.suppress(threading.BrokenBarrierError):
        meeting.wait(timeout=10)


_executor = _Pool(int(settings.NODUS_VIEW_THREADS), "nodus-view")
_setup_executor = _Pool(STREAM_SETUP_THREADS, "nodus-watch-setup")


def _query_gives_way(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """A database execute wrapper: a backlogged flow's view gives way before each query
    (`give_way_on_thread`), unless it is inside a transaction, where waiting would hold its
    locks."""
    if not context["connection"].in_atomic_block:
        give_way_on_thread()
    return execute(sql, params, many, context)


def _rendered(view: Callable[..., HttpResponseBase], request: HttpRequest, kwargs: Any) -> Any:
    # Its queries and its rendering are steps too: a backlogged flow's view already running
    # when a light request comes gives way at each (fairqueuing.give_way_on_thread).
    with connection.execute_wrapper(_query_gives_way):
        response = view(request, **kwargs)
    if isinstance(response, SimpleTemplateResponse):
        give_way_on_thread()
        response.render()
        plain = HttpResponse(response.content, status=response.status_code)
        for header, value in response.items():
            plain[header] = value
        plain.cookies = response.cookies
        # The rendered response sits in reference cycles (DRF's response, request and view point
        # at one another), which only the collector's rare full pass frees: let go of its body
        # now, or every big list's two copies (the data and its rendering, about 100 MB at
        # 10,000 objects) stayed in memory until then.
        response.content = b""
        if isinstance(response, Response):
            response.data = None
        return plain
    return response


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`fn(*args)` on a pool thread, its connection checked before and after as Django's
    request signals would (replaced when broken or past CONN_MAX_AGE)."""
    close_old_connections()
    try:
        return fn(*args)
    finally:
        close_old_connections()


_on_pool = sync_to_async(_call, thread_sensitive=False, executor=_executor)
_on_setup_pool = sync_to_async(_call, thread_sensitive=False, executor=_setup_executor)


def pooled(view: Callable[..., HttpResponseBase]) -> Callable[..., Awaitable[HttpResponseBase]]:
    """`view` (sync) as an async view that runs it on the pool."""

    async def pooled_view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        await give_way()  # a backlogged flow's view waits while a light request runs
        response: HttpResponseBase = await _on_pool(_rendered, (view, request, kwargs))
        await give_way()  # and so does the rest of its answer
        return response

    # What Django and our checks read off a view (csrf_exempt, view_class and so its `access`
    # declaration, the name) stays readable off the wrapper.
    pooled_view.__dict__.update(view.__dict__)
    for attribute in ("__name__", "__qualname__", "__doc__"):
        if hasattr(view, attribute):
            setattr(pooled_view, attribute, getattr(view, attribute))
    return pooled_view


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """A database call from async code (a watch's set-up) on the set-up threads, their
    connections kept."""
    return await _on_setup_pool(fn, args)
