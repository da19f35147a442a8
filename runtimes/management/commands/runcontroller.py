"""Runs the verification controller on its own (scale-out): one leader at a time.

Every instance waits for the leader lock (a PostgreSQL advisory lock; a file lock on SQLite);
the one holding it reconciles, the others stand by and take over within about a second of its
death. SIGTERM or SIGINT stops it cleanly: the current reconcile finishes, the lock is released.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runtimes.controller import settings as controller_settings
from runtimes.controller.loop import Controller, run_with_leader_election


class Command(BaseCommand):
    help = "Run the TrainingRuntime controller (one leader at a time; SIGTERM stops it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workers", type=int, default=2, help="reconciles run at once")
        parser.add_argument(
            "--once",
            action="store_true",
            help="reconcile every runtime once and exit (no leader election)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("nodus").setLevel(logging.INFO)
        if options["once"]:
            controller = Controller(controller_settings.from_django())
            try:
                outcomes = controller.sync_once()
            finally:
                controller.sources.close()
            for (namespace, name), outcome in sorted(outcomes.items()):
                verdict = outcome.verdict
                state = f"{verdict.status} {verdict.reason}" if verdict else "gone"
                self.stdout.write(f"{namespace}/{name}: {state}")
            return
        stop = threading.Event()

        def on_signal(signum: int, _frame: Any) -> None:
            self.stdout.write(f"controller: {signal.Signals(signum).name}, stopping")
            self.stdout.flush()
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

        def announce(leading: bool) -> None:
            self.stdout.write("controller: leading" if leading else "controller: stood down")
            self.stdout.flush()

        self.stdout.write("controller: waiting for the leader lock")
        self.stdout.flush()
        run_with_leader_election(stop, workers=options["workers"], on_change=announce)
        self.stdout.write("controller: stopped")
