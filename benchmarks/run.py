"""`make bench`: p50/p99 of the benchmark cases, each beside a baseline from the same run.

    .venv/bin/python benchmarks/run.py            # every case
    .venv/bin/python benchmarks/run.py http       # only the named ones
    BENCH_REPEAT=300 .venv/bin/python benchmarks/run.py
    .venv/bin/python benchmarks/run.py scale      # 10,000 runtimes on PostgreSQL and SQLite
                                                  # (runs only when named; a few minutes)
    .venv/bin/python benchmarks/run.py abuse      # the threat table's attacks (benchmarks/abuse.py)
    .venv/bin/python benchmarks/run.py herd       # nodus beside etcd under a herd of clients
                                                  # (benchmarks/herd.py; runs in `make bench`)
    .venv/bin/python benchmarks/run.py fairness   # a polite client beside a greedy one (APF)
    .venv/bin/python benchmarks/run.py herd-scaleout  # 10,000 watchers on 4 workers, PostgreSQL
                                                  # + Redis (benchmarks/herd_scaleout.py; only
                                                  # when named)

Runs against a throwaway data dir (SQLite, in-memory channel layer, no controller): a developer's
.data is never touched. Prints numbers only; nothing here asserts on time.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(selected: list[str]) -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="nodus-bench-"))
    os.environ["NODUS_DATA_DIR"] = str(data_dir)
    (data_dir / "static").mkdir()  # WhiteNoise warns about a missing STATIC_ROOT otherwise
    os.environ["NODUS_EMBEDDED_CONTROLLER"] = "0"  # no registry lookups beside the requests
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("NODUS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")

    import django

    django.setup()

    # Case modules register themselves on import, in the order they run; add new ones here.
    from benchmarks import http_cases, validation_cases, console_cases, scale  # noqa: F401, I001
    from benchmarks import controller_load, abuse, herd, fairness  # noqa: F401
    from benchmarks.harness import CASES, EXPLICIT, Bench, CaseSkipped, Comparison
    from benchmarks.report import report
    from benchmarks.server import live_server

    unknown = [name for name in selected if name not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    bench = Bench(repeat=int(os.environ.get("BENCH_REPEAT", "100")))
    results: list[tuple[str, Comparison]] = []
    skipped: list[str] = []
    with live_server(data_dir) as server:
        bench.context["server"] = server
        for name, run in CASES.items():
            if (selected and name not in selected) or (not selected and name in EXPLICIT):
                continue
            try:
                results.extend((name, comparison) for comparison in run(bench))
            except CaseSkipped as why:
                skipped.append(f"{name}: skipped ({why})")
    print(f"python {sys.version.split()[0]}, SQLite, data in {data_dir}")
    print(report(results))
    print("\n".join(skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
