"""Liveness and readiness checks, answered as kube-apiserver answers /livez and /readyz.

`/livez` says the process is up (a load balancer restarts it when not). `/readyz` says this
worker can serve: the database answers, the channel layer (Redis at scale) carries a message to
ourselves, the watch hub is not far behind the event log, and (under `serve --workers N`) the
pool has all N workers live. Other parts may add a readiness
check with `register_readiness_check`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.conf import settings

log = logging.getLogger("nodus.health")

CHECK_TIMEOUT_SECONDS = settings.NODUS_HEALTH_CHECK_TIMEOUT
# A hub this many revisions behind the log serves watches too stale to be useful: the worker
# takes itself out of the load balancer until it catches up.
MAX_HUB_LAG = settings.NODUS_READYZ_MAX_HUB_LAG

CheckFn = Callable[[], Awaitable[None]]


class CheckFailed(Exception):
    """A check's reason for failing; logged, never sent to the client (as kube)."""


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    reason: str = ""
    excluded: bool = False


async def ping() -> None:
    return None


def _current_revision() -> int:
    from runtimes.storage.store import current_revision

    return current_revision()


# The checks that read the database do it on asgiref's thread, its connection checked before
# and after as Django's request signals would (`nodus_console.asgi.Handler` sends none for an API
# request): a broken connection is replaced, so a check fails only while the database does.
async def database() -> None:
    await database_sync_to_async(_current_revision)()


async def channel_layer() -> None:
    """Sends a message to a channel of our own and reads it back."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    channel = await layer.new_channel("readyz.")
    token = uuid.uuid4().hex
    await layer.send(channel, {"type": "readyz.ping", "token": token})
    message = await layer.receive(channel)
    if message.get("token") != token:
        raise CheckFailed(f"channel layer returned another message: {message!r}")


def hub_lag() -> int | None:
    """Revisions committed to the log that this process's hub has not read yet.

    None when there is no hub in this process (nothing to lag). Reads `runtimes.watch.hub.lag()`
    when the hub offers it, else compares `runtimes.watch.hub.last_revision()` (the newest revision
    the hub has read, None before it starts) with the log.
    """
    try:
        # import_module (not `from runtimes import hub`) so a test can stand a hub in.
        hub = importlib.import_module("runtimes.watch.hub")
    except ModuleNotFoundError as exc:
        if exc.name != "runtimes.watch.hub":
            raise  # the hub is there but broken: the check must fail, not pass
        return None
    lag = getattr(hub, "lag", None)
    if callable(lag):
        value = lag()
        return None if value is None else int(value)
    last = getattr(hub, "last_revision", None)
    if callable(last):
        seen = last()
    else:
        # Until the hub offers last_revision(): its process-wide instance, if one started.
        running = getattr(hub, "_hub", None)
        seen = getattr(running, "last", None)
    if seen is None:
        return None
    return max(0, _current_revision() - int(seen))


async def hub() -> None:
    lag = await database_sync_to_async(hub_lag)()
    if lag is not None and lag > MAX_HUB_LAG:
        raise CheckFailed(f"watch hub is {lag} revisions behind the event log (max {MAX_HUB_LAG})")


async def worker_pool() -> None:
    """Under `serve --workers N`: fewer than N workers live is a degraded pool (a worker died
    and its replacement has not started yet, or it keeps dying)."""
    from runtimes.api.supervisor import POOL_FILE, pool_state

    path = os.environ.get(POOL_FILE)
    if not path:
        return
    asked, live = pool_state(path)
    if live < asked:
        raise CheckFailed(f"degraded worker pool: {live} of {asked} workers live")


LIVEZ_CHECKS: dict[str, CheckFn] = {"ping": ping}
READYZ_CHECKS: dict[str, CheckFn] = {
    "ping": ping,
    "database": database,
    "channel-layer": channel_layer,
    "hub-lag": hub,
    "workers": worker_pool,
}


def register_readiness_check(name: str, check: CheckFn) -> None:
    """Adds a readiness check (say, the controller's leader lease); last one by a name wins."""
    READYZ_CHECKS[name] = check


async def _run(name: str, check: CheckFn) -> Result:
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
    except TimeoutError:
        log.warning("%s check timed out after %ss", name, CHECK_TIMEOUT_SECONDS)
        return Result(name, False, "timed out")
    except Exception as exc:  # any failure, whatever its type, makes the check fail
        log.warning("%s check failed: %s", name, exc)
        return Result(name, False, str(exc) or type(exc).__name__)
    return Result(name, True)


async def run_checks(checks: dict[str, CheckFn], exclude: Collection[str] = ()) -> list[Result]:
    """Runs the checks concurrently; results keep the registered order, excluded ones marked."""

    async def one(name: str, check: CheckFn) -> Result:
        return Result(name, True, excluded=True) if name in exclude else await _run(name, check)

    return list(await asyncio.gather(*(one(name, check) for name, check in checks.items())))


def render(
    results: list[Result], endpoint: str, verbose: bool, unknown_excludes: list[str]
) -> tuple[int, str]:
    """(HTTP status, body) as kube-apiserver writes them.

    Success is `ok`, or with ?verbose one `[+]name ok` line per check and `<endpoint> check
    passed`. Failure is always the verbose list with `[-]name failed: reason withheld` and
    `<endpoint> check failed`, status 500.
    """
    passed = all(result.ok for result in results)
    if passed and not verbose:
        return 200, "ok"
    lines = [
        f"[+]{result.name} excluded: ok"
        if result.excluded
        else f"[+]{result.name} ok"
        if result.ok
        else f"[-]{result.name} failed: reason withheld"
        for result in results
    ]
    if unknown_excludes:
        names = ", ".join(f'"{name}"' for name in unknown_excludes)
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}")
    lines.append(f"{endpoint} check {'passed' if passed else 'failed'}")
    return (200 if passed else 500), "\n".join(lines) + "\n"
