"""What the abuse benchmark measures around one attack: time, answer, the server's memory, /livez.

`Probe.run(call)` runs `call` under a hard time bound, while a thread samples the server's
VmRSS every 10 ms and another asks /livez every 100 ms. The call returns what the server
answered as text ("200", "422 Invalid", "connection reset", ...), or that text and the seconds
it measured itself when the time that matters is not the call's own (a stream's end after a
revocation). A call still running at the bound is reported as "timed out" and left to end on
its own (its sockets have their own timeouts); a server whose RSS passes the cap is killed, so
one bomb can't take the machine with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

SAMPLE_SECONDS = 0.01
LIVEZ_EVERY_SECONDS = 0.1
LIVEZ_TIMEOUT_SECONDS = 1.0
TAIL_SECONDS = 0.05  # memory still growing just after the answer counts too


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of `pid` in MB; (0, 0) once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0.0
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found.get("VmRSS", 0.0), found.get("VmHWM", 0.0)


@dataclass
class Outcome:
    """One measured request (or attack): what came back, how long, what it cost the server."""

    label: str
    answer: str = ""  # the status code, or what happened instead
    seconds: float | None = None  # None: no answer within the bound
    rss_before_mb: float = 0.0
    rss_peak_mb: float = 0.0
    hwm_after_mb: float = 0.0
    livez_worst_seconds: float | None = None  # the slowest /livez answer during the attack
    livez_missed: int = 0  # /livez polls unanswered within 1 s
    at_least: bool = False  # `seconds` is the attack's own bound, not when the server acted
    killed: str = ""  # why the probe killed the server, if it did
    extra: dict[str, str] = field(default_factory=dict)  # figures a row adds (429s, p99s...)

    @property
    def rss_added_mb(self) -> float:
        return max(0.0, self.rss_peak_mb - self.rss_before_mb)


class AtLeast(NamedTuple):
    """An answer from an attack that waited out its own bound: the time is a lower bound."""

    text: str
    seconds: float


Answer = str | tuple[str, float] | AtLeast


class Timeout(Exception):
    """Raised inside an attack that watches its own clock (streams, slow clients)."""


def _livez_seconds(host: str, port: int) -> float | None:
    """One GET /livez on a fresh connection; None if it took longer than a second."""
    started = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=LIVEZ_TIMEOUT_SECONDS) as conn:
            conn.settimeout(LIVEZ_TIMEOUT_SECONDS)
            conn.sendall(
                f"GET /livez HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
            while conn.recv(4096):
                if time.perf_counter() - started > LIVEZ_TIMEOUT_SECONDS:
                    return None
    except OSError:
        return None
    return time.perf_counter() - started


class Probe:
    """Measures attacks against one server process."""

    def __init__(self, pid: int, host: str, port: int, bound: float, rss_cap_mb: float) -> None:
        self.pid, self.host, self.port = pid, host, port
        self.bound = bound
        self.rss_cap_mb = rss_cap_mb
        self.killed = ""

    def run(
        self, label: str, call: Callable[[], Answer], bound: float | None = None, livez: bool = True
    ) -> Outcome:
        limit = self.bound if bound is None else bound
        outcome = Outcome(label)
        outcome.rss_before_mb = memory_mb(self.pid)[0]
        peak = [outcome.rss_before_mb]
        livez_times: list[float | None] = []
        done = threading.Event()
        answer: list[Answer] = []

        def attack() -> None:
            try:
                answer.append(call())
            except Timeout as why:
                answer.append(f"timed out ({why})" if str(why) else "timed out")
            except OSError as error:
                answer.append(_describe(error))
            except Exception as error:  # the harness reports, never dies, whatever comes back
                answer.append(f"{type(error).__name__}: {error}"[:120])
            finally:
                done.set()

        def sample() -> None:
            while not done.is_set():
                rss = memory_mb(self.pid)[0]
                peak[0] = max(peak[0], rss)
                if rss > self.rss_cap_mb and not self.killed:
                    self.killed = f"RSS passed the {self.rss_cap_mb:.0f} MB cap"
                    _kill(self.pid)
                time.sleep(SAMPLE_SECONDS)

        def poll_livez() -> None:
            while not done.wait(LIVEZ_EVERY_SECONDS):
                livez_times.append(_livez_seconds(self.host, self.port))

        started = time.perf_counter()
        threads = [threading.Thread(target=attack, daemon=True)]
        threads.append(threading.Thread(target=sample, daemon=True))
        if livez:
            threads.append(threading.Thread(target=poll_livez, daemon=True))
        for thread in threads:
            thread.start()
        finished = done.wait(limit)
        elapsed = time.perf_counter() - started
        if finished:
            time.sleep(TAIL_SECONDS)
        done.set()  # stops the sampler and the poller, even when the attack is still running
        for thread in threads[1:]:
            thread.join(timeout=LIVEZ_TIMEOUT_SECONDS + 1)
        peak[0] = max(peak[0], memory_mb(self.pid)[0])
        outcome.rss_peak_mb = peak[0]
        outcome.hwm_after_mb = memory_mb(self.pid)[1]
        if finished and answer and isinstance(answer[0], tuple):
            outcome.answer, outcome.seconds = answer[0]
            outcome.at_least = isinstance(answer[0], AtLeast)
        elif finished and answer:
            outcome.answer, outcome.seconds = str(answer[0]), elapsed
        else:
            outcome.answer = f"timed out after {limit:.0f} s"
        answered = [t for t in livez_times if t is not None]
        outcome.livez_missed = len(livez_times) - len(answered)
        outcome.livez_worst_seconds = max(answered) if answered else None
        outcome.killed = self.killed
        return outcome


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _describe(error: OSError) -> str:
    if isinstance(error, TimeoutError | socket.timeout):
        return "timed out (socket)"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, BrokenPipeError):
        return "connection closed while sending"
    return f"{type(error).__name__}: {error}"[:120]
