"""The controller's CPU pacing: rest in proportion to the CPU a reconcile used, never minutes."""

from __future__ import annotations

import threading
import time

import pytest

from runtimes.controller.pacing import CpuPacer


class FakeCpu:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_it_rests_for_the_work_times_one_over_the_share_minus_one() -> None:
    cpu = FakeCpu()
    pacer = CpuPacer(0.125, cpu_clock=cpu)

    started = pacer.start()
    cpu.now += 0.01  # a reconcile that used 10 ms of this thread's CPU

    assert pacer.worked(started) == pytest.approx(0.07)  # busy one eighth of the time


def test_it_never_rests_longer_than_the_cap() -> None:
    cpu = FakeCpu()
    pacer = CpuPacer(0.1, cpu_clock=cpu, max_rest=2.0)
    started = pacer.start()
    cpu.now += 60.0

    assert pacer.worked(started) == 2.0


def test_a_full_share_never_rests() -> None:
    cpu = FakeCpu()
    pacer = CpuPacer(1.0, cpu_clock=cpu)
    started = pacer.start()
    cpu.now += 1.0

    assert pacer.worked(started) == 0.0


def test_waiting_is_not_work_and_stop_ends_a_rest_at_once() -> None:
    pacer = CpuPacer(0.01)  # the real thread clock
    started = pacer.start()
    time.sleep(0.2)  # waiting for a registry: no CPU used
    assert pacer.worked(started) < 0.5

    pacer = CpuPacer(0.01, cpu_clock=iter([0.0, 10.0]).__next__)
    pacer.worked(pacer.start())  # owes the 5 s cap
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    pacer.rest(stop)
    assert time.monotonic() - began < 1.0


@pytest.mark.parametrize("share", [0.0, -1.0, 1.5])
def test_it_refuses_a_share_outside_zero_to_one(share: float) -> None:
    with pytest.raises(ValueError, match="CPU share"):
        CpuPacer(share)
