"""Cross-process revision nudges over the Channels layer.

Every process reads the same event log; a nudge only says "there is something new, read it".
A process that commits a write sends its revision to the group `nodus.revisions`; every other
process's hub wakes and re-reads the log from its last delivered revision, so all workers
deliver the same ordered stream. A lost nudge costs latency, never correctness: hubs also poll.

With the in-memory layer (the embedded default: one process) there is nobody to nudge, so the
nudger stays idle. The nudger runs its own event loop in its own thread, so it gets its own layer
instance rather than sharing a layer bound to daphne's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

from runtimes.accounts import revocation

# There is one nudger per process (`process_nudger`), and it sends for every local commit
# (`published`, subscribed to `runtimes.storage.events` when the app loads) whether or not this
# process has a hub: a worker that only serves writes never starts one, yet the workers
# watching must
# hear of its writes at once rather than on their next poll. A hub listens on the same nudger.
#
# The same group carries access changes (`accounts.revocation`): a process where a token was
# revoked,
# a role binding removed or a user deactivated says so, and every other process moves its own
# revocation epoch, so its open streams check their callers again (`runtimes.watch.guard`). A lost
# one is caught within a second by the stored epoch every process reads (`accounts.revocation`).

log = logging.getLogger("nodus.hub")

GROUP = "nodus.revisions"
MESSAGE_TYPE = "nodus.revision"
ACCESS_TYPE = "nodus.access"
# channels-redis forgets group members after a day; re-joining now and then keeps us in.
REJOIN_SECONDS = 600.0


def _layer() -> Any | None:
    from channels.layers import InMemoryChannelLayer, channel_layers

    try:
        layer = channel_layers.make_backend("default")
    except Exception:  # no CHANNEL_LAYERS configured: single process, nothing to do
        log.debug("no channel layer configured; revision nudges are off")
        return None
    if isinstance(layer, InMemoryChannelLayer):
        return None
    return layer


class Nudger:
    """Sends this process's revisions and wakes the hub on other processes' ones.

    Runs its own event loop in its own thread (only when a cross-process layer is set up).
    """

    def __init__(self, on_nudge: Callable[[int], None] | None = None) -> None:
        self.origin = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.listeners: list[Callable[[int], None]] = [on_nudge] if on_nudge else []
        self.layer: Any | None = None
        self._pending = 0
        self._access_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def listen(self, listener: Callable[[int], None]) -> None:
        if listener not in self.listeners:
            self.listeners.append(listener)

    def unlisten(self, listener: Callable[[int], None]) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    @property
    def enabled(self) -> bool:
        return self.layer is not None

    def start(self) -> None:
        self.layer = _layer()
        if self.layer is None or self._thread is not None:
            return
        ready = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._run(ready)), name="nodus-nudge", daemon=True
        )
        self._thread.start()
        ready.wait(5)

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        def cancel_all() -> None:
            # On the loop's own thread, in one go: cancelling task by task from here would race
            # the loop finishing (and closing) once the first cancellations land.
            for task in asyncio.all_tasks(loop):
                task.cancel()

        with contextlib.suppress(RuntimeError):  # the loop has already ended
            loop.call_soon_threadsafe(cancel_all)

    def note_local(self, revision: int) -> None:
        """Called (from any thread) when this process committed `revision`."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return
        self._pending = max(self._pending, revision)
        loop.call_soon_threadsafe(wake.set)

    def note_access(self) -> None:
        """Called (from any thread) when access was taken away in this process."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return
        self._access_pending = True
        loop.call_soon_threadsafe(wake.set)

    async def _run(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(self._send_forever(), self._receive_forever())

    async def _send_forever(self) -> None:
        assert self._wake is not None
        assert self.layer is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            revision, self._pending = self._pending, 0
            access, self._access_pending = self._access_pending, False
            if access:
                await self._send({"type": ACCESS_TYPE, "origin": self.origin})
            if revision:
                message = {"type": MESSAGE_TYPE, "revision": revision, "origin": self.origin}
                await self._send(message)

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.layer is not None
        try:
            await self.layer.group_send(GROUP, message)
        except Exception:  # the layer being down must not stop local delivery
            log.warning("could not send nudge %s", message, exc_info=True)

    async def _receive_forever(self) -> None:
        assert self.layer is not None
        channel = await self.layer.new_channel("nodus-hub.")
        await self._join(channel)
        # Group membership expires in the layer; refresh it beside the receive rather than by
        # timing the receive out: cancelling a channels-redis receive can lose a message.
        rejoin = asyncio.create_task(self._rejoin_forever(channel))
        try:
            while True:
                try:
                    message = await self.layer.receive(channel)
                except Exception:
                    log.warning("revision nudge receive failed; retrying", exc_info=True)
                    await asyncio.sleep(1.0)
                    continue
                if message.get("origin") == self.origin:
                    continue
                if message.get("type") == ACCESS_TYPE:
                    revocation.bump(broadcast=False)
                else:
                    for listener in list(self.listeners):
                        listener(int(message.get("revision") or 0))
        finally:
            rejoin.cancel()

    async def _join(self, channel: str) -> None:
        assert self.layer is not None
        while True:
            try:
                await self.layer.group_add(GROUP, channel)
                return
            except Exception:
                log.warning("could not join the revision nudge group; retrying", exc_info=True)
                await asyncio.sleep(1.0)

    async def _rejoin_forever(self, channel: str) -> None:
        while True:
            await asyncio.sleep(REJOIN_SECONDS)
            await self._join(channel)


_process: Nudger | None = None
_process_lock = threading.Lock()


def process_nudger() -> Nudger:
    """This process's nudger, started on first use (idle without a cross-process layer)."""
    global _process
    with _process_lock:
        if _process is None:
            _process = Nudger()
            _process.start()
        return _process


def published(revision: int) -> None:
    """A local commit (a `runtimes.storage.events` listener): tell the other processes."""
    process_nudger().note_local(revision)


def access_changed() -> None:
    """Access was taken away here (an `accounts.revocation` listener): tell the others."""
    process_nudger().note_access()
