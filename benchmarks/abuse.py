"""The threat table's attacks against a live server: time to answer, status, peak RSS, baselines.

    .venv/bin/python benchmarks/abuse.py                   # every row but the controller's (~3 min)
    .venv/bin/python benchmarks/abuse.py redos selectors   # only the named groups
    .venv/bin/python benchmarks/abuse.py --controller      # also 2,000 runtimes, registry down
    .venv/bin/python benchmarks/run.py abuse               # the same rows as a case of make bench

Starts its own `manage.py serve --no-seed` on free loopback ports, in throwaway data dirs, with
the embedded controller off (on only for the controller row). For each attack it prints what
the server answered, how long that took, how much the server's RSS rose while it worked (VmRSS
sampled every 10 ms, minus the RSS before; VmHWM after), the slowest /livez answer meanwhile,
and the same figures for a benign request of the same kind measured in the same run, with the
ratio and the issue's target. Every attack has a hard bound (30 s by default) and reports
"timed out" rather than hanging; a server whose RSS passes the cap (1 GB) is killed and started
again. Nothing here asserts: `tests/security/` holds the regression tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import abuse_lifecycle, abuse_requests, abuse_streams  # noqa: E402
from benchmarks.abuse_probe import Outcome  # noqa: E402
from benchmarks.abuse_requests import Attacks  # noqa: E402
from benchmarks.abuse_server import AbuseServer  # noqa: E402
from benchmarks.harness import Bench, Comparison, Timings, case  # noqa: E402
from benchmarks.report import AbuseRow, abuse_table  # noqa: E402

# Rows against the shared server, in this order: the guessing rows come last, since a lockout
# per address would also lock out the console sign-ins of the rows before them.
SHARED: dict[str, Callable[[Attacks], list[AbuseRow]]] = {
    f.__name__: f
    for f in [
        *abuse_requests.ROWS,
        *abuse_streams.ROWS,
        abuse_lifecycle.sigterm,
        *abuse_streams.GUESSING,
    ]
}
GROUPS = [*SHARED, "controller"]
HERD_RUNTIMES = 300  # what each of the 200 concurrent lists returns


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def guarded(name: str, group: Callable[[Attacks], list[AbuseRow]], at: Attacks) -> list[AbuseRow]:
    """The group's rows; one row saying why, if the harness itself failed on the way."""
    try:
        return group(at)
    except Exception as error:  # one broken group must not cost the others' figures
        failed = Outcome(name, f"the harness failed: {type(error).__name__}: {error}"[:200])
        return [AbuseRow(f"{name} (not measured)", "", failed)]


def run(
    selected: list[str], bound: float, rss_cap_mb: float, controller: bool, seconds: float
) -> list[AbuseRow]:
    rows: list[AbuseRow] = []
    shared = [name for name in SHARED if not selected or name in selected]
    if shared:
        server = AbuseServer.fresh(runtimes=HERD_RUNTIMES)
        progress(f"server: {server.data_dir} (log: {server.log})")
        try:
            server.start()
            at = Attacks(server, bound, rss_cap_mb)
            for name in shared:
                started = time.monotonic()
                server.ensure_up()  # the row before may have ended it
                rows += guarded(name, SHARED[name], at)
                progress(f"  {name}: {time.monotonic() - started:.1f} s")
        finally:
            server.remove()
    if controller or "controller" in selected:
        started = time.monotonic()
        rows += abuse_lifecycle.controller(bound, rss_cap_mb, seconds)
        progress(f"  controller: {time.monotonic() - started:.1f} s")
    return rows


def _timings(label: str, seconds: float | None, bound: float) -> Timings:
    return Timings(label, [bound if seconds is None else seconds])


@case("abuse", explicit=True)
def abuse_case(bench: Bench) -> Iterable[Comparison]:
    """The default rows as a case of run.py: each attack's time beside its baseline's."""
    bound = 30.0
    rows = run([], bound, 1024, controller=False, seconds=60)
    print(abuse_table(rows))
    for row in rows:
        if row.baseline is None:
            continue
        note = f"{row.attack.answer}; +{row.attack.rss_added_mb:.1f} MB RSS; target {row.target}"
        yield Comparison(
            _timings(row.name, row.attack.seconds, bound),
            _timings(row.baseline.label, row.baseline.seconds, bound),
            note=note,
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("groups", nargs="*", help=f"any of: {', '.join(GROUPS)}")
    parser.add_argument("--bound", type=float, default=30.0, help="seconds per attack at most")
    parser.add_argument("--rss-cap-mb", type=float, default=1024.0, help="kill the server past")
    parser.add_argument("--controller", action="store_true", help="also the controller row")
    parser.add_argument(
        "--controller-seconds", type=float, default=60.0, help="how long the controller row runs"
    )
    args = parser.parse_args(argv)
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    started = time.monotonic()
    rows = run(args.groups, args.bound, args.rss_cap_mb, args.controller, args.controller_seconds)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, SQLite, "
        f"bound {args.bound:.0f} s per attack, RSS cap {args.rss_cap_mb:.0f} MB, "
        f"{time.monotonic() - started:.0f} s in all"
    )
    print(abuse_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
