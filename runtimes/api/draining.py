"""Clean shutdown: on SIGTERM stop accepting, end watches cleanly, finish what is in flight, exit.

`Draining` is the outermost ASGI middleware: it knows every request in flight, and whether its
response has started or ended. `manage.py serve` installs `terminate_on_signals()`, which on the
first SIGTERM (or SIGINT) runs `shut_down()` on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.error import ReactorNotRunning

from runtimes.api.flowcontrol import ASGIApp, Message, Receive, Scope, Send, answer_status
from runtimes.apimachinery.errors import ApiError

# 1. the listening ports close: new connections are refused, so a load balancer moves on;
# 2. requests that arrive on connections already open get 429 with ``Retry-After: 1`` and
#    kube-apiserver's message for the same moment ("The apiserver is shutting down, please try
#    again later."): nothing of theirs was done;
# 3. long-running requests end cleanly: an HTTP watch's chunked response gets its last, empty
#    chunk (client-go sees the stream end and watches again, elsewhere or after the restart),
#    a websocket closes with 1001 "going away";
# 4. everything else (gets, lists, writes) runs to its end and its response goes out, for up to
#    ``NODUS_SHUTDOWN_SECONDS`` (10) less 2 s; a write answered 201 was committed first, so no
#    acknowledged write is lost, and one cut off at the deadline was never acknowledged;
# 5. the reactor stops (daphne cancels whatever is left), ``serve`` writes what it batches (the
#    tokens' last uses, queued audit events) and exits, without waiting for request threads
#    still blocked on the stopped event loop (Python would join them forever: the "took too
#    long to shut down" of old).
#
# A watchdog thread ends the process at ``NODUS_SHUTDOWN_SECONDS`` whatever is still running, so
# SIGTERM means gone within 10 s. A second SIGTERM or SIGINT skips the draining.

log = logging.getLogger("nodus.shutdown")

SHUTDOWN_SECONDS = 10.0
# What the reactor's own stop and the exit need after the draining: the drain ends this long
# before the budget.
STOP_MARGIN_SECONDS = 2.0
LONG_RUNNING = "long-running"
GOING_AWAY = 1001


def shutting_down() -> ApiError:
    return ApiError(
        "TooManyRequests",
        "The apiserver is shutting down, please try again later.",
        retry_after=1,
        fix="The server is restarting. Retry after 1 s (kubectl and client-go do), at another "
        "worker behind the load balancer or at this one once it is back.",
    )


@dataclass(eq=False)
class InFlight:
    scope: Scope
    send: Send
    long_running: bool
    task: asyncio.Task[None] | None = None
    started: bool = False  # http.response.start or websocket.accept went out
    ended: bool = False  # the last body chunk or websocket.close went out
    ending: bool = False  # the drain cancelled it to end it cleanly

    async def track(self, message: Message) -> None:
        kind = message["type"]
        if kind in {"http.response.start", "websocket.accept"}:
            self.started = True
        elif (kind == "http.response.body" and not message.get("more_body")) or kind in {
            "websocket.close",
        }:
            self.ended = True
        await self.send(message)

    async def finish(self, receive: Receive) -> None:
        """Ends the response of a request the drain cancelled, as a clean end of stream."""
        if self.ended:
            return
        if self.scope["type"] == "websocket":
            if self.started:
                await self.send({"type": "websocket.close", "code": GOING_AWAY})
            else:
                await answer_status(self.scope, receive, self.send, shutting_down(), _id())
            return
        if self.started:
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await answer_status(self.scope, receive, self.send, shutting_down(), _id())


def _id() -> str:
    return uuid.uuid4().hex


@dataclass
class Registry:
    """The requests in flight in this process, and whether it is draining."""

    requests: set[InFlight] = field(default_factory=set)
    draining: bool = False

    def busy(self) -> list[InFlight]:
        return [r for r in self.requests if not r.long_running]

    def end_long_running(self) -> int:
        ended = 0
        for request in list(self.requests):
            if request.long_running and request.task is not None and not request.task.done():
                request.ending = True
                request.task.cancel()
                ended += 1
        return ended


REGISTRY = Registry()


class Draining:
    """The ASGI middleware: ``Draining(app, is_long_running, is_exempt)``. `is_long_running`
    says which requests the drain ends rather than waits for (watches, websockets);
    `is_exempt` which ones are still served while it drains (health checks)."""

    def __init__(
        self,
        app: ASGIApp,
        is_long_running: Callable[[Scope], bool],
        is_exempt: Callable[[Scope], bool],
        registry: Registry = REGISTRY,
    ) -> None:
        self.app = app
        self.is_long_running = is_long_running
        self.is_exempt = is_exempt
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        if self.registry.draining and not self.is_exempt(scope):
            await answer_status(scope, receive, send, shutting_down(), _id())
            return
        request = InFlight(scope, send, self.is_long_running(scope))
        task = asyncio.ensure_future(self.app(scope, receive, request.track))
        request.task = task
        self.registry.requests.add(request)
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not request.ending or (current is not None and current.cancelling()):
                raise  # daphne (or the client going) cancelled us, not the drain
            await request.finish(receive)
        finally:
            self.registry.requests.discard(request)


async def shut_down(
    budget: float,
    stop: Callable[[], None],
    registry: Registry = REGISTRY,
    stop_listening: Callable[[], int] | None = None,
) -> None:
    """Steps 1 to 5 of the module's docstring; `stop` stops the reactor, `stop_listening`
    closes the listening ports and says how many (the reactor's, unless given)."""
    began = time.monotonic()
    registry.draining = True
    closed = (stop_listening or _stop_listening)()
    ended = registry.end_long_running()
    log.info(
        "shutting down: %d listeners closed, %d watches ended, %d requests to finish",
        closed,
        ended,
        len(registry.busy()),
    )
    deadline = began + max(0.0, budget - STOP_MARGIN_SECONDS)
    while registry.requests and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    left = len(registry.requests)
    if left:
        log.warning("shutting down: %d requests still running at the deadline; cancelling", left)
    else:
        log.info("shutting down: every request answered in %.1f s", time.monotonic() - began)
    stop()


def _reactor() -> Any:
    """Twisted's global reactor (daphne's asyncio reactor), untyped: its stubs type it as a
    module attribute without the methods of the installed reactor."""
    from twisted.internet import reactor

    return reactor


def _stop_listening() -> int:
    from twisted.internet import tcp

    from runtimes.api.serving import stop_accepting

    ports = [r for r in _reactor().getReaders() if isinstance(r, tcp.Port)]
    for port in ports:
        port.stopListening()
    return len(ports) + stop_accepting()  # the listeners that accept on a thread


def _send_going_away() -> None:
    """Lets the application close a websocket with 1001: daphne closes through autobahn's
    `sendClose`, which takes only 1000 and 3000-4999 from applications, though 1001 "going
    away" is the code RFC 6455 gives a server going down."""
    from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol

    class GoingAwayProtocol(WebSocketProtocol):  # type: ignore[misc]
        def serverClose(self, code: int | None = None) -> None:
            if code == GOING_AWAY:
                self.sendCloseFrame(code=GOING_AWAY, isReply=False)
                return
            super().serverClose(code)

    WebSocketFactory.protocol = GoingAwayProtocol


def terminate_on_signals(budget: float = SHUTDOWN_SECONDS) -> None:
    """Installs the SIGTERM/SIGINT handling on daphne's event loop (call before ``run()``,
    with daphne's own signal handlers off)."""
    _send_going_away()
    reactor = _reactor()
    loop: asyncio.AbstractEventLoop = reactor._asyncioEventloop
    signalled: list[int] = []

    def stop() -> None:
        # Whichever comes second, the drain's end or a second signal (a process group's
        # signal can reach us twice at once), finds the reactor stopping already.
        with contextlib.suppress(ReactorNotRunning):
            reactor.stop()

    def on_signal(signum: int) -> None:
        signalled.append(signum)
        name = signal.Signals(signum).name
        if len(signalled) > 1:
            log.warning("%s again: stopping at once", name)
            stop()
            return
        log.info("%s: shutting down within %.0f s", name, budget)
        _watchdog(budget)
        loop.create_task(shut_down(budget, stop))

    def install() -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)

    reactor.callWhenRunning(install)


def _watchdog(budget: float) -> None:
    def expire() -> None:
        time.sleep(max(0.0, budget - 0.5))
        log.error("shutdown took %.0f s: exiting with requests still running", budget)
        exit_now(1)

    threading.Thread(target=expire, name="nodus-shutdown-watchdog", daemon=True).start()


def exit_now(code: int = 0) -> None:
    """Ends the process without joining request threads that may wait on the stopped event
    loop forever (asgiref's sync-to-async bridges); logs and output are flushed first."""
    log.info("exiting")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
