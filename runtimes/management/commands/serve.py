"""Runs everything in one process: migrate, seed, collect the static files, the in-process
controller and daphne.

`make run` calls this. It serves the console over HTTP and the same app over HTTPS with a
self-signed certificate (client-go sends bearer tokens only over TLS, so kubectl uses that
port), and prints the URLs, how to log in and how to point kubectl here. Both listeners bound
every request's size and time (`runtimes.api.serving`).
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from nodus_console.staticfiles import collect as collect_static
from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
from runtimes.accounts.tls import ensure_certificate

# With `--workers N` this process supervises N worker processes behind the same ports, replacing
# one that dies (`runtimes.api.supervisor`). SIGTERM (or Ctrl-C) shuts down cleanly within
# ``NODUS_SHUTDOWN_SECONDS`` (10): no new connections, watches end as streams end, requests in
# flight are answered, then the process exits (``runtimes.api.draining``).

DEFAULT_API_SERVER = "https://127.0.0.1:8443"  # what `manage.py kubeconfig` assumes
log = logging.getLogger("nodus.serve")


def write_what_is_batched() -> None:
    """After the last request is answered, before the process exits (without joining its
    threads): the tokens' last uses and the audit events still waiting for their threads are
    written. A failure is logged; the shutdown watchdog bounds the time either may take."""
    from runtimes.accounts import auditlog, tokens

    try:
        tokens.flush_uses()
    except Exception:  # the database is away: these last uses are lost
        log.warning("could not record when tokens were last used", exc_info=True)
    auditlog.flush()


# Set for `--workers`' processes: their listening sockets share the ports (SO_REUSEPORT).
SHARED_PORTS = "NODUS_SHARED_PORTS"


@contextmanager
def embedded_controller(enabled: bool) -> Iterator[None]:
    """The controller in this process (one per server: the parent of `--workers`) while the
    block runs."""
    if not enabled:
        yield
        return
    from runtimes.controller.loop import start_in_process, stop_in_process

    start_in_process()
    try:
        yield
    finally:
        stop_in_process(timeout=1.0)


def kubeconfig_command(user: str, server: str) -> str:
    """The command that writes a kubeconfig for this server, as typed in another shell: it names
    the data directory and the API's address whenever they are not the defaults that shell
    would assume."""
    words = [".venv/bin/python", "manage.py", "kubeconfig", "--user", user]
    if server != DEFAULT_API_SERVER and not settings.NODUS_PUBLIC_URL:
        words += ["--server", server]
    command = shlex.join(words) + " > nodus.kubeconfig"
    if os.environ.get("NODUS_DATA_DIR"):
        command = f"NODUS_DATA_DIR={shlex.quote(str(settings.DATA_DIR))} {command}"
    return command


class Command(BaseCommand):
    help = "Migrate, seed and serve HTTP + websockets with daphne (embedded default)."
    standby = False  # a worker booted ahead, waiting for the parent's word before it listens

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--tls-port", type=int, default=int(os.environ.get("TLS_PORT", "8443")))
        parser.add_argument("--no-seed", action="store_true")
        parser.add_argument(
            "--workers",
            type=int,
            default=int(os.environ.get("WORKERS", "1")),
            help="worker processes behind the same two ports (with PostgreSQL and Redis)",
        )
        # Internal: one of `--workers`' processes; the parent migrated, seeded and printed.
        parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
        # Internal: a worker that boots, then waits for the parent's word before it listens.
        parser.add_argument("--standby", action="store_true", help=argparse.SUPPRESS)
        # A deployment splits the two halves: one Job sets up, every API pod only serves.
        setup = parser.add_mutually_exclusive_group()
        setup.add_argument(
            "--setup-only",
            action="store_true",
            help="migrate, make the admin, seed and collect the static files, then exit",
        )
        setup.add_argument(
            "--no-setup",
            action="store_true",
            help="serve at once: the database is migrated and the static files collected",
        )
        parser.add_argument("--no-demo", action="store_true", help="do not create the demo project")

    def handle(self, *args: Any, **options: Any) -> None:
        host, port, tls_port = options["host"], options["port"], options["tls_port"]
        if options["worker"]:
            from runtimes.api.supervisor import exit_with_parent

            exit_with_parent()
            self.standby = options["standby"]
            self.serve(host, port, tls_port, controller=False)
            return
        if options["no_setup"]:
            self.serve_workers(options["workers"], host, port, tls_port)
            return
        call_command("migrate", interactive=False, verbosity=0)
        admin, password, _generated = ensure_admin()
        if not options["no_demo"]:
            ensure_demo_project(admin)
        if not options["no_seed"]:
            call_command("seed", verbosity=0)
        # Hashed, compressed static files, before the app (and WhiteNoise's file list) loads.
        collect_static()
        if options["setup_only"]:
            self.stdout.write(f"nodus console is set up: admin {admin.get_username()}")
            return
        ensure_certificate(settings.DATA_DIR / "tls", [host])  # made once, before any worker
        shown = "127.0.0.1" if host in {"0.0.0.0", "::"} else host  # noqa: S104
        kept = (
            ""
            if os.environ.get("NODUS_ADMIN_PASSWORD")
            else f"  (kept in {settings.DATA_DIR / 'admin-password'})"
        )
        user = admin.get_username()
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "nodus console is running",
                    f"  console:     http://{shown}:{port}/",
                    f"  API (TLS):   https://{shown}:{tls_port}  (self-signed; the kubeconfig "
                    "carries its CA)",
                    f"  log in as:   {user} / {password}{kept}",
                    f"  kubectl:     {kubeconfig_command(user, f'https://{shown}:{tls_port}')}",
                    "               kubectl --kubeconfig nodus.kubeconfig get tr -n nodus",
                    f"  data:        {settings.DATA_DIR}",
                    "",
                ]
            )
        )
        self.stdout.flush()
        self.serve_workers(options["workers"], host, port, tls_port)

    def serve_workers(self, workers: int, host: str, port: int, tls_port: int) -> None:
        if workers > 1:
            self.supervise(workers, host, port, tls_port)
            return
        self.serve(host, port, tls_port, controller=settings.NODUS_EMBEDDED_CONTROLLER)

    def serve(self, host: str, port: int, tls_port: int, *, controller: bool) -> None:
        with embedded_controller(controller):
            self._run_daphne(host, port, tls_port)
        from runtimes.api import draining

        write_what_is_batched()
        draining.exit_now(0)

    def _run_daphne(self, host: str, port: int, tls_port: int) -> None:
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import twisted_loop

        from nodus_console.asgi import application
        from runtimes.api import draining
        from runtimes.api.flowcontrol import executor_threads
        from runtimes.api.serving import Server, settle_collector, share_ports

        if os.environ.get(SHARED_PORTS) == "1":
            share_ports()
        key, cert = ensure_certificate(settings.DATA_DIR / "tls", [host])
        interface = f":interface={host}" if host else ""
        endpoints = build_endpoint_description_strings(host=host, port=port)
        endpoints.append(f"ssl:{tls_port}{interface}:privateKey={key}:certKey={cert}")
        server = Server(
            application=application,
            endpoints=endpoints,
            http_timeout=None,
            websocket_timeout=86400,
            application_close_timeout=10,
            signal_handlers=False,  # SIGTERM and SIGINT drain first (runtimes.api.draining)
        )
        # The hub's reads run on the loop's default executor: sized to the list seats plus a
        # reserve (runtimes.api.flowcontrol), not to the machine's cores.
        twisted_loop.set_default_executor(
            ThreadPoolExecutor(max_workers=executor_threads(), thread_name_prefix="asgi")
        )
        if self.standby and not self._promoted():
            return  # the parent closed our stdin without a word: not needed after all
        draining.terminate_on_signals(settings.NODUS_SHUTDOWN_SECONDS)
        # Threads hand the interpreter lock over every NODUS_SWITCH_INTERVAL_MS (1; Python's
        # default is 5): a request waits about that long, not five times as long, each time
        # it wants the lock back from a busy thread (the embedded controller, a big list).
        sys.setswitchinterval(settings.NODUS_SWITCH_INTERVAL_MS / 1000)
        settle_collector()
        server.run()

    def _promoted(self) -> bool:
        """A standby waits, booted, for the parent's word; whether it came. A SIGINT meanwhile
        (a Ctrl-C sent to every process) is the parent's to answer: it closes our stdin."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return bool(sys.stdin.buffer.readline())
        finally:
            signal.signal(signal.SIGINT, previous)

    def supervise(self, workers: int, host: str, port: int, tls_port: int) -> None:
        """Keeps `workers` processes serving on the same two ports (SO_REUSEPORT; the kernel
        spreads connections across them), replacing any that dies (`runtimes.api.supervisor`),
        runs the embedded controller here (one for all of them), passes SIGTERM/SIGINT on, and
        exits when they have, within NODUS_SHUTDOWN_SECONDS."""
        from runtimes.api.supervisor import Backoff, Supervisor

        env = {**os.environ, SHARED_PORTS: "1", "NODUS_EMBEDDED_CONTROLLER": "0"}
        command = [sys.executable, sys.argv[0], "serve", "--worker"]
        command += ["--host", host, "--port", str(port), "--tls-port", str(tls_port)]
        supervisor = Supervisor(
            command,
            env,
            workers,
            settings.DATA_DIR / "workers.json",
            Backoff(cap=settings.NODUS_WORKER_BACKOFF_MAX_SECONDS),
            say=self._say,
        )
        pids = supervisor.start()
        self.stdout.write(f"  workers:     {workers} (pids {', '.join(str(p) for p in pids)})")
        self.stdout.flush()
        with embedded_controller(settings.NODUS_EMBEDDED_CONTROLLER):
            clean = supervisor.run(settings.NODUS_SHUTDOWN_SECONDS)
        sys.exit(0 if clean else 1)

    def _say(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()
