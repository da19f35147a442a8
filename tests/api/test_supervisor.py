"""The worker supervisor's rules: a dead worker replaced at once, a crash loop backed off."""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from runtimes.api.supervisor import Backoff, Supervisor, pool_state


def test_the_first_death_is_replaced_at_once_and_a_crash_loop_waits_longer_each_time() -> None:
    backoff = Backoff(base=0.5, cap=30.0)
    delays = [backoff.delay(failures) for failures in range(1, 10)]
    assert delays[0] == 0.0
    assert all(later >= earlier for earlier, later in itertools.pairwise(delays))
    assert delays[1] == 0.5
    assert delays[2] == 2 * delays[1]
    assert max(delays) == 30.0


def test_a_worker_that_keeps_dying_is_replaced_with_growing_waits(tmp_path: Path) -> None:
    """Workers that exit at once: the first replacement is immediate, later ones wait."""
    lines: list[str] = []
    supervisor = Supervisor(
        [sys.executable, "-c", "raise SystemExit(3)"],
        {},
        1,
        tmp_path / "workers.json",
        Backoff(base=0.2, cap=0.4),
        say=lines.append,
        standby=False,
    )
    supervisor.start()
    deadline = time.monotonic() + 30
    while sum("replacing it" in line for line in lines) < 4 and time.monotonic() < deadline:
        supervisor.tick()
        time.sleep(0.02)
    replacing = [line for line in lines if "replacing it" in line]
    waits = [float(line.split("replacing it in ")[1].removesuffix(" s")) for line in replacing]
    assert waits[:4] == [0.0, 0.2, 0.4, 0.4]
    assert "exited with 3" in lines[0]
    asked, live = pool_state(str(tmp_path / "workers.json"))
    assert asked == 1
    assert live <= asked
