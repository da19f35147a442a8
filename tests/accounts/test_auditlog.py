"""The audit log's writer: rotation by size, and a full disk or full queue never blocking."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from runtimes.accounts import auditlog


def _dropped(reason: str) -> float:
    value = REGISTRY.get_sample_value("nodus_audit_events_dropped_total", {"reason": reason})
    return value or 0.0


def test_it_rotates_the_file_past_its_size(settings: Any, tmp_path: Path) -> None:
    settings.NODUS_AUDIT_LOG = str(tmp_path / "audit.log")
    settings.NODUS_AUDIT_MAX_BYTES = 300
    settings.NODUS_AUDIT_BACKUPS = 2
    writer = auditlog.AuditWriter()
    for number in range(20):
        writer.emit({"auditID": str(number), "padding": "x" * 60})
    writer.flush()
    files = auditlog.files()
    assert [f.name for f in files] == ["audit.log", "audit.log.1", "audit.log.2"]
    assert all(f.stat().st_size <= 300 for f in files)
    newest = [json.loads(line)["auditID"] for line in files[0].read_text().splitlines()]
    assert newest[-1] == "19"


def test_what_queues_while_it_writes_goes_out_in_one_write(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.NODUS_AUDIT_LOG = str(tmp_path / "audit.log")
    appended: list[int] = []
    busy, go = threading.Event(), threading.Event()
    append = auditlog._append

    def slow_append(path: Path, data: bytes) -> None:
        appended.append(data.count(b"\n"))
        busy.set()
        go.wait(timeout=30)
        append(path, data)

    monkeypatch.setattr(auditlog, "_append", slow_append)
    writer = auditlog.AuditWriter()
    writer.emit({"auditID": "0"})
    assert busy.wait(timeout=30)
    for number in range(1, 101):
        writer.emit({"auditID": str(number)})
    go.set()
    writer.flush()
    assert appended == [1, 100]
    written = (tmp_path / "audit.log").read_text().splitlines()
    assert [json.loads(line)["auditID"] for line in written] == [str(n) for n in range(101)]


def test_events_that_come_one_by_one_gather_before_a_write(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request's event at a time, a few milliseconds apart (within LINGER_SECONDS): one
    write for them all, not a wake-up of the writer for each."""
    settings.NODUS_AUDIT_LOG = str(tmp_path / "audit.log")
    appended: list[int] = []
    append = auditlog._append

    def counting_append(path: Path, data: bytes) -> None:
        appended.append(data.count(b"\n"))
        append(path, data)

    monkeypatch.setattr(auditlog, "_append", counting_append)
    writer = auditlog.AuditWriter()
    for number in range(5):
        writer.emit({"auditID": str(number)})
        time.sleep(0.002)
    writer.flush()
    assert appended == [5]
    assert len((tmp_path / "audit.log").read_text().splitlines()) == 5


def test_a_full_disk_drops_and_counts(settings: Any) -> None:
    settings.NODUS_AUDIT_LOG = "/dev/full"
    before = _dropped("write_failed")
    writer = auditlog.AuditWriter()
    writer.emit({"auditID": "lost"})
    writer.flush()
    assert _dropped("write_failed") == before + 1


def test_a_full_queue_drops_without_waiting(settings: Any, tmp_path: Path) -> None:
    # A FIFO nobody reads: the writer thread blocks opening it, as on a stalled disk.
    fifo = tmp_path / "audit.log"
    os.mkfifo(fifo)
    settings.NODUS_AUDIT_LOG = str(fifo)
    settings.NODUS_AUDIT_QUEUE = 2
    before = _dropped("queue_full")
    writer = auditlog.AuditWriter()
    writer.emit({"auditID": "0"})
    # Until the writer has taken it and is blocked opening the FIFO (a busy machine may start
    # its thread late, after the path below has moved on).
    deadline = time.monotonic() + 10
    while writer._queue.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    for number in range(1, 10):
        writer.emit({"auditID": str(number)})  # returns at once, whatever the writer does
    # One event is with the blocked writer, two wait in the queue; the rest were dropped.
    assert _dropped("queue_full") >= before + 7
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(fifo.read_text().splitlines()))
    reader.start()
    settings.NODUS_AUDIT_LOG = str(tmp_path / "after.log")
    writer.flush()
    reader.join(timeout=30)
    assert 1 <= len(lines) <= 3
