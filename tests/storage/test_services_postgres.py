"""The store on the machine's PostgreSQL: concurrent writer processes, revisions commit in order.

Each test gets its own throwaway database on 127.0.0.1:5432 (trust auth). Writers are separate
processes, as daphne workers are at scale; a reader polls `revision > last ORDER BY revision`
the way the hub tails the event log. If revisions could commit out of order (N+1 visible before
N), that reader would step past N and never see it: the sequence it observed would have a gap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import services
from tests.support.api import runtime_manifest

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 4
ROUNDS = 20  # per writer: create own object, patch it, patch the shared one

SETUP = """
import django, os
django.setup()
from django.core.management import call_command
from runtimes.storage import store
from runtimes.storage.models import Project
from runtimes.registry.kinds import lookup
import json
call_command("migrate", interactive=False, verbosity=0)
Project.objects.get_or_create(name="demo")
store.create(lookup("trainingruntimes"), "demo", json.loads(os.environ["MANIFEST"]))
"""

WRITER = """
import django, json, os, sys
django.setup()
from runtimes.storage import store
from runtimes.registry.kinds import lookup
rt = lookup("trainingruntimes")
worker, rounds = sys.argv[1], int(sys.argv[2])
template = json.loads(os.environ["MANIFEST"])

def annotate(key, value):
    def change(obj):
        obj["metadata"].setdefault("annotations", {})[key] = value
        return obj
    return change

for i in range(rounds):
    name = f"w{worker}-{i}"
    body = json.loads(json.dumps(template))
    body["metadata"]["name"] = name
    store.create(rt, "demo", body)
    store.mutate(rt, "demo", name, annotate("round", str(i)))
    store.mutate(rt, "demo", "shared", annotate(f"nodus.dev/w{worker}", str(i)))
print("done")
"""


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh database; its DATABASE_URL."""
    with services.temp_database() as url:
        yield url


def _env(database_url: str, data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "nodus_console.settings",
        "DATABASE_URL": database_url,
        "NODUS_DATA_DIR": str(data_dir),
        "NODUS_EMBEDDED_CONTROLLER": "0",
        "MANIFEST": json.dumps(runtime_manifest("shared")),
        "NODUS_LOG_LEVEL": "WARNING",
    }


class Tail(threading.Thread):
    """Polls the event log as the hub does and records every revision it sees, in order."""

    def __init__(self, conninfo: str) -> None:
        super().__init__(daemon=True)
        import psycopg

        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.last = self._poll_once_max()
        self.start_revision = self.last
        self.seen: list[int] = []
        self.stop = threading.Event()

    def _poll_once_max(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(revision), 0) FROM runtimes_event").fetchone()
        return int(row[0]) if row else 0

    def poll(self) -> None:
        rows = self.conn.execute(
            "SELECT revision FROM runtimes_event WHERE revision > %s ORDER BY revision",
            (self.last,),
        ).fetchall()
        for (revision,) in rows:
            self.seen.append(int(revision))
            self.last = int(revision)

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
        self.poll()  # everything committed before stop was set


def test_it_commits_revisions_in_order_under_concurrent_writers(
    database: str, tmp_path: Path
) -> None:
    env = _env(database, tmp_path)
    subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, timeout=120)
    conninfo = database.replace("postgres://", "postgresql://")
    tail = Tail(conninfo)
    tail.start()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(worker), str(ROUNDS)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(WRITERS)
    ]
    deadline = time.monotonic() + 240
    outcomes = [w.communicate(timeout=max(1, deadline - time.monotonic())) for w in writers]
    tail.stop.set()
    tail.join(timeout=30)
    for writer, (out, err) in zip(writers, outcomes, strict=True):
        assert writer.returncode == 0, err[-3000:]
        assert out.strip() == "done"

    import psycopg

    with psycopg.connect(conninfo) as conn:
        logged = [r[0] for r in conn.execute("SELECT revision FROM runtimes_event ORDER BY 1")]
        counter = conn.execute("SELECT value FROM runtimes_revisioncounter").fetchone()
        bodies = [json.loads(r[0]) for r in conn.execute("SELECT body FROM runtimes_storedobject")]

    writes = WRITERS * ROUNDS * 3
    # The log, read in revision order, has no gap and ends at the counter.
    assert logged == list(range(logged[0], logged[0] + len(logged)))
    assert counter is not None
    assert logged[-1] == counter[0]
    # The tailing reader saw every revision of the run, each once, in order: no revision
    # became visible before a smaller one.
    assert tail.seen == list(range(tail.start_revision + 1, tail.start_revision + writes + 1))
    # No patch of the shared object was lost to a concurrent one.
    shared = next(b for b in bodies if b["metadata"]["name"] == "shared")
    assert shared["metadata"]["annotations"] == {
        f"nodus.dev/w{worker}": str(ROUNDS - 1) for worker in range(WRITERS)
    }
    assert len(bodies) == 1 + WRITERS * ROUNDS
