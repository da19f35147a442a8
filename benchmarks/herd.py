"""The herd: the same loads against nodus and against a real etcd, ratios nodus / etcd.

    .venv/bin/python benchmarks/run.py herd        # about 10 minutes at the defaults
    BENCH_HERD_OBJECTS=200 BENCH_HERD_CLIENTS=20 BENCH_HERD_WATCHERS=100 \\
        BENCH_HERD_BIG_OBJECTS=1000 .venv/bin/python benchmarks/run.py herd   # a quick look

nodus is a fresh `manage.py serve --no-seed` on its own data dir with the embedded controller on
(`herd_nodus`); etcd is Debian's etcd-server 3.4 on loopback, over its v3 JSON gateway
(`etcd_peer`; installed with apt-get when missing, skipped with the reason if that fails).
nodus runs first, then etcd, never both at once. The loads (`herd_loads`, counts from
BENCH_HERD_*; defaults in brackets):

1. creates of ~4 KB objects [2,000], [16] in flight: total seconds (etcd: puts of the same
   bytes). One object carries the label bench=probe; all carry group=herd.
2. full lists, the client parsing the JSON [5]: the median (etcd: a range over the prefix).
3. the herd: [200] clients at once, each its own client and token, list bench=probe with
   limit=1, then watch from the list's resourceVersion with bookmarks (etcd: a range with
   limit=1, then a watch from its revision + 1); 429s are honoured by sleeping Retry-After.
   Start to watching (the watch's 200 headers) p50/p99; members not watching within [60] s are
   dropped.
4. [20] updates of the probe, one every [50] ms, to those watchers: delivery latency from each
   write's start to each watcher's receipt; delivered / expected.
5. the same to a herd of [1,000] (nodus: 5 per token; at most 100 per token is the server's
   per-client limit; etcd: watches of the probe's key).
6. creates of probe-labelled objects at [50]/s for [10] s, open loop, with load 3's watchers:
   delivery latency.
7. (BENCH_HERD_BIG=0 skips) up to [10,000] objects with load 5's watchers open, one full list,
   then the server's peak RSS (VmHWM of daphne's process; etcd's beside it).
8. /livez (etcd: /health) polled every 100 ms on a fresh connection throughout, by another
   process (`herd_livez`): p99 per load.

Writes go through 16 writer tokens (one per worker) so that the per-client seat pool is not
what load 1 measures; the process-wide pools still apply. Nothing here asserts on time.

This module also registers herd-scaleout (10,000 watchers on 4 workers on PostgreSQL + Redis;
runs only when named): `herd_scaleout` measures it. Both cases' figures, tables and results
files are in `report`.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import etcd_peer, herd_nodus, herd_side
from benchmarks import herd_scaleout as scaleout
from benchmarks.harness import Bench, Comparison, case
from benchmarks.herd_loads import settings
from benchmarks.report import (
    herd_block,
    herd_rows,
    machine_note,
    memory_note,
    scaleout_block,
    scaleout_comparisons,
    scaleout_summary,
    write_results,
)

PER_TOKEN = 5  # load 5's watchers per token (the server allows 100)


@case("herd")
def herd(_bench: Bench) -> Iterable[Comparison]:
    s = settings()
    began = time.time()
    work = Path(tempfile.mkdtemp(prefix="nodus-herd-"))
    (work / "nodus").mkdir()
    members = max(s.clients, math.ceil(s.watchers / PER_TOKEN))
    with herd_nodus.serving(work / "nodus", members, s.inflight, s.controller) as target:
        namespace = target.namespace
        nodus = herd_side.run(target, s, work)
    etcd, skipped = None, ""
    if not s.etcd:
        skipped = "BENCH_HERD_ETCD=0"
    else:
        try:
            with etcd_peer.running(work) as (host, port, process):
                peer = etcd_peer.Etcd(host, port, process.pid, namespace, s.inflight)
                etcd = herd_side.run(peer, s, work)
                etcd.version = peer.name
        except etcd_peer.Unavailable as why:
            skipped = str(why)
            herd_side.log(f"etcd side skipped: {skipped}")
        except Exception as why:  # the nodus side's figures still print
            skipped = f"the etcd side failed: {type(why).__name__}: {why}"
            herd_side.log(skipped)
    if os.environ.get("BENCH_HERD_KEEP") == "1":  # the servers' logs, to read after a run
        herd_side.log(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)

    python = platform.python_version()
    cpus = os.cpu_count() or 0
    all_rows = herd_rows(nodus, etcd, s)
    machine = machine_note(nodus, etcd, cpus, python)
    notes = [memory_note(nodus, etcd)]
    minutes = (time.time() - began) / 60
    header = (
        f"Run of {datetime.fromtimestamp(began, UTC):%Y-%m-%d %H:%M} UTC ({minutes:.0f} min), "
        f"nodus on SQLite with the embedded controller beside "
        f"{etcd.version if etcd else 'no etcd'}: {machine}."
    )
    text = herd_block(all_rows, notes, header, s, skipped)
    print(text)
    herd_side.log(f"figures written to {write_results('herd', text)}")
    comparisons = [row.comparison(skipped) for row in all_rows if not row.docs_only]
    comparisons[0].note += f"; {machine}; {'; '.join(notes)}"
    if skipped:
        print(f"herd: etcd side skipped: {skipped}", file=sys.stderr)
    return comparisons


@case("herd-scaleout", explicit=True)
def herd_scaleout(_bench: Bench) -> Iterable[Comparison]:
    s = scaleout.settings()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"nodus-herd-scaleout-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        run = scaleout.measure(s, work)
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
    print(scaleout_summary(run))
    scaleout.log(f"figures written to {write_results('herd-scaleout', scaleout_block(run))}")
    when = datetime.fromtimestamp(run.began, UTC)
    scaleout.log(f"run of {when:%Y-%m-%d %H:%M} UTC took {(time.time() - run.began) / 60:.1f} min")
    return scaleout_comparisons(run)
