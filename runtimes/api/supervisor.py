"""`serve --workers N`: keeps N worker processes serving, as gunicorn's arbiter does.

A dead worker (a crash, an OOM kill, kill -9) is replaced at once while the others serve on the
shared ports (SO_REUSEPORT). Booting one takes seconds, so one more waits booted in standby and
takes the dead one's place at the parent's word (a line on its stdin). A crash loop backs off
(`Backoff`, capped at `NODUS_WORKER_BACKOFF_MAX_SECONDS`); a worker that served `STABLE_SECONDS`
starts the count afresh. SIGTERM/SIGINT drain every worker (`runtimes.api.draining`), with no
replacements after. The pool's state goes to a JSON file the workers' `/readyz` reads
(`runtimes.api.health.worker_pool`): fewer live than asked fails its `workers` check.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("nodus.supervisor")

# Set for the workers: the file their /readyz reads the pool's state from.
POOL_FILE = "NODUS_WORKER_POOL_FILE"
# A worker that served this long before it died was not crash-looping.
STABLE_SECONDS = 10.0
TICK_SECONDS = 0.1


@dataclass(frozen=True)
class Backoff:
    """How long a worker's replacement waits after `failures` quick deaths in a row: the first
    is replaced at once, then `base`, doubling, at most `cap`."""

    base: float = 0.5
    cap: float = 30.0

    def delay(self, failures: int) -> float:
        if failures <= 1:
            return 0.0
        return float(min(self.cap, self.base * 2 ** (failures - 2)))


@dataclass
class Slot:
    """One of the N places in the pool, and the worker now in it."""

    index: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0  # quick deaths in a row
    restart_at: float | None = None  # when the next worker starts, after a death

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class Supervisor:
    command: Sequence[str]
    env: dict[str, str]
    workers: int
    pool_file: Path
    backoff: Backoff = field(default_factory=Backoff)
    say: Callable[[str], None] = log.warning
    slots: list[Slot] = field(default_factory=list)
    stopping: list[int] = field(default_factory=list)
    standby: bool = True  # keep a booted worker waiting to replace a dead one
    spare: Slot = field(default_factory=lambda: Slot(-1))

    def start(self) -> list[int]:
        """Starts every worker; their pids."""
        self.slots = [Slot(index) for index in range(self.workers)]
        for slot in self.slots:
            self._spawn(slot)
        if self.standby:
            self._spawn(self.spare)
        self._write_pool()
        return [slot.process.pid for slot in self.slots if slot.process is not None]

    def _spawn(self, slot: Slot) -> None:
        env = {**self.env, POOL_FILE: str(self.pool_file)}
        # Their own process group: Ctrl-C reaches the parent only, which passes it on once (a
        # worker given SIGINT twice would skip its drain).
        if slot is self.spare:
            command = [*self.command, "--standby"]
            slot.process = subprocess.Popen(
                command, env=env, stdin=subprocess.PIPE, process_group=0
            )
        else:
            slot.process = subprocess.Popen(list(self.command), env=env, process_group=0)
        slot.started_at = time.monotonic()
        slot.restart_at = None

    def _promote(self, slot: Slot) -> bool:
        """Puts the booted standby in `slot`'s place; whether there was one to put."""
        spare = self.spare.process
        if spare is None or spare.poll() is not None or spare.stdin is None:
            return False
        try:
            spare.stdin.write(b"serve\n")
            spare.stdin.close()
        except OSError:  # it died just now
            return False
        slot.process, slot.started_at, slot.restart_at = spare, time.monotonic(), None
        self.spare.process, self.spare.restart_at = None, time.monotonic()
        return True

    def pids(self) -> list[int]:
        return [slot.process.pid for slot in self.slots if slot.alive() and slot.process]

    def _write_pool(self) -> None:
        state = {"asked": self.workers, "live": len(self.pids()), "pids": self.pids()}
        temporary = self.pool_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(state))
        os.replace(temporary, self.pool_file)  # atomic: a reader sees the old or the new state

    def tick(self) -> None:
        """Notices dead workers and starts the replacements that are due."""
        now = time.monotonic()
        changed = False
        for slot in self.slots:
            process = slot.process
            if process is not None and process.poll() is not None and slot.restart_at is None:
                lived = now - slot.started_at
                slot.failures = 1 if lived >= STABLE_SECONDS else slot.failures + 1
                delay = self.backoff.delay(slot.failures)
                slot.restart_at = now + delay
                self.say(
                    f"worker {process.pid} exited with {process.returncode} after {lived:.1f} s: "
                    f"replacing it in {delay:.1f} s"
                )
                changed = True
            if slot.restart_at is not None and now >= slot.restart_at:
                promoted = self._promote(slot)
                if not promoted:
                    self._spawn(slot)
                assert slot.process is not None
                how = "the standby worker" if promoted else "worker"
                self.say(f"{how} {slot.process.pid} serves in place of the dead one")
                changed = True
        if self.standby:
            self._keep_spare(now)
        if changed:
            self._write_pool()

    def _keep_spare(self, now: float) -> None:
        """Boots a new standby after a promotion, or (backing off) after one that died."""
        spare = self.spare
        process = spare.process
        if process is not None and process.poll() is not None and spare.restart_at is None:
            lived = now - spare.started_at
            spare.failures = 1 if lived >= STABLE_SECONDS else spare.failures + 1
            spare.restart_at = now + self.backoff.delay(spare.failures)
            self.say(f"standby worker {process.pid} exited with {process.returncode}")
        if spare.restart_at is not None and now >= spare.restart_at:
            self._spawn(spare)

    def pass_on(self, signum: int, _frame: Any = None) -> None:
        """SIGTERM/SIGINT: every worker drains; none is replaced any more."""
        self.stopping.append(signum)
        for slot in self.slots:
            if slot.alive() and slot.process is not None:
                slot.process.send_signal(signum)
        spare = self.spare.process
        if spare is not None and spare.poll() is None and spare.stdin is not None:
            spare.stdin.close()  # no word: the standby exits without listening

    def run(self, shutdown_seconds: float) -> bool:
        """Supervises until SIGTERM or SIGINT, then waits for the workers (killing any left after
        `shutdown_seconds`). Whether every worker ended cleanly."""
        signal.signal(signal.SIGTERM, self.pass_on)
        signal.signal(signal.SIGINT, self.pass_on)
        while not self.stopping:
            self.tick()
            time.sleep(TICK_SECONDS)
        deadline = time.monotonic() + shutdown_seconds
        clean = True
        for slot in [*self.slots, self.spare]:
            if slot.process is None:
                continue
            try:
                code = slot.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                slot.process.kill()
                slot.process.wait()
                code = -1
            # A standby still booting served nobody: killing it loses nothing.
            clean = clean and (code == 0 or slot is self.spare)
        self.pool_file.unlink(missing_ok=True)
        return clean


def exit_with_parent(every: float = 1.0) -> None:
    """In a worker: drains and exits (SIGTERM to itself) once its supervisor is gone, rather
    than serve on unsupervised (its own process group no longer gets the terminal's Ctrl-C)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        log.warning("the supervisor %s is gone: draining and exiting", parent)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="nodus-parent-watch", daemon=True).start()


def pool_state(path: str) -> tuple[int, int]:
    """(asked, live) from the pool file the supervisor writes."""
    state = json.loads(Path(path).read_text())
    return int(state["asked"]), int(state["live"])
