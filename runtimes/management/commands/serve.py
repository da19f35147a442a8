"""Runs everything in one process: migrate, seed, the in-process controller and daphne.

`make run` calls this. It serves the console over HTTP and the same app over HTTPS with a
self-signed certificate (client-go sends bearer tokens only over TLS, so kubectl uses that
port), and prints the URLs, how to log in and how to point kubectl here. Both listeners bound
every request's size and time (`runtimes.api.serving`).

SIGTERM (or Ctrl-C) shuts down cleanly within ``NODUS_SHUTDOWN_SECONDS`` (10): no new
connections, watches end as streams end, requests in flight are answered, then the process exits
(``runtimes.api.draining``).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
from runtimes.accounts.tls import ensure_certificate


class Command(BaseCommand):
    help = "Migrate, seed and serve HTTP + websockets with daphne (embedded default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--tls-port", type=int, default=int(os.environ.get("TLS_PORT", "8443")))
        parser.add_argument("--no-seed", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        admin, password, _generated = ensure_admin()
        ensure_demo_project(admin)
        if not options["no_seed"]:
            call_command("seed", verbosity=0)
        host, port, tls_port = options["host"], options["port"], options["tls_port"]
        key, cert = ensure_certificate(settings.DATA_DIR / "tls", [host])
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
                    f"  kubectl:     .venv/bin/python manage.py kubeconfig --user {user} "
                    "> nodus.kubeconfig",
                    "               kubectl --kubeconfig nodus.kubeconfig get tr -n nodus",
                    f"  data:        {settings.DATA_DIR}",
                    "",
                ]
            )
        )
        self.stdout.flush()
        if settings.NODUS_EMBEDDED_CONTROLLER:
            from runtimes.controller.loop import start_in_process

            start_in_process()
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import twisted_loop

        from nodus_console.asgi import application
        from runtimes.api import draining
        from runtimes.api.flowcontrol import executor_threads
        from runtimes.api.serving import Server

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
        # Watch set-up and the hub's reads run on the loop's default executor: sized to the
        # list seats plus a reserve (runtimes.api.flowcontrol), not to the machine's cores.
        twisted_loop.set_default_executor(
            ThreadPoolExecutor(max_workers=executor_threads(), thread_name_prefix="asgi")
        )
        draining.terminate_on_signals(settings.NODUS_SHUTDOWN_SECONDS)
        # Threads hand the interpreter lock over every NODUS_SWITCH_INTERVAL_MS (1; Python's
        # default is 5): a request waits about that long, not five times as long, each time
        # it wants the lock back from a busy thread (the embedded controller, a big list).
        sys.setswitchinterval(settings.NODUS_SWITCH_INTERVAL_MS / 1000)
        server.run()
        if settings.NODUS_EMBEDDED_CONTROLLER:
            from runtimes.controller.loop import stop_in_process

            stop_in_process(timeout=1.0)
        draining.exit_now(0)
