"""The abuse rows about connections and clients: slow clients, open streams, guessing, herds.

Each is bounded twice: by its own clock (a slow-loris stops at the bound, a guess loop at a
count) and by the probe's, which reports "timed out" if the row's own clock failed.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import httpx

from benchmarks import abuse_bodies as bodies
from benchmarks.abuse_http import ConsoleSession, answer, dribble_headers, get_status, send
from benchmarks.abuse_probe import Answer, AtLeast, Outcome
from benchmarks.abuse_requests import Attacks
from benchmarks.abuse_server import HOST
from benchmarks.abuse_watch import HttpWatch, WebSocketWatch
from benchmarks.report import AbuseRow

SLOW_BYTE_SECONDS = 0.5
LOGIN_GUESSES = 15  # failed logins tried before giving up on a lockout
TOKEN_GUESSES = 60  # failed bearer tokens tried before giving up on a 429
HERD = 200
HERD_SECONDS = 5.0  # waves of the herd follow one another for this long
HERD_WAVES = 10  # at most


def slow_loris(at: Attacks) -> list[AbuseRow]:
    """Both listeners at once (each waits out the same bound), each beside a whole request."""
    listeners = {"HTTP": (at.server.port, False), "HTTPS": (at.server.tls_port, True)}
    baselines = {
        name: at.measure(f"GET /livez over {name}, headers at once", partial(_whole, port, tls))
        for name, (port, tls) in listeners.items()
    }
    attacks: dict[str, Outcome] = {}

    def attack(name: str) -> None:
        port, tls = listeners[name]
        call = partial(dribble_headers, HOST, port, tls, SLOW_BYTE_SECONDS, at.bound)
        attacks[name] = at.measure(f"slow-loris {name}", call, bound=at.bound + 10)

    beside = threading.Thread(target=attack, args=("HTTPS",))
    beside.start()
    attack("HTTP")
    beside.join(timeout=at.bound + 20)
    return [
        AbuseRow(
            f"slow-loris on the {name} listener: a header byte every {SLOW_BYTE_SECONDS} s",
            "anyone, unauthenticated",
            attacks.get(name) or Outcome(f"slow-loris {name}", "the probe did not return"),
            baselines[name],
            "cut off by a header timeout",
        )
        for name in listeners
    ]


def _whole(port: int, tls: bool) -> str:
    scheme = "https" if tls else "http"
    with httpx.Client(verify=False, timeout=10) as client:  # the self-signed certificate
        return send(client, "GET", f"{scheme}://{HOST}:{port}/livez")


def revocation(at: Attacks) -> list[AbuseRow]:
    """Revoking a token on the console's Tokens page while two watches hold it."""
    at.server.ensure_up()  # the streams open before the probe would start it
    editor = at.server.user("editor")
    token, token_id = editor["revocable"]["token"], editor["revocable"]["id"]
    path = f"{at.collection}?watch=1"
    http_watch = HttpWatch(HOST, at.server.port, path, token)
    ws_watch = WebSocketWatch(f"ws://{HOST}:{at.server.port}{path}", token)
    http_watch.ready.wait(10)
    ws_watch.ready.wait(10)
    opened = f"HTTP watch opened: {http_watch.ending.opened}; WebSocket: {ws_watch.ending.opened}"
    session = ConsoleSession(at.server.url, timeout=at.bound)
    seen: dict[str, str] = {}

    def revoke_then_wait() -> Answer:
        signed_in = session.login("editor", editor["password"])
        session.client.get("/account/tokens")  # the page the revoke button is on
        revoked = session.post(f"/account/tokens/{token_id}/revoke", {})
        seen["revoke"] = f"sign-in {signed_in.status_code}, revoke {revoked.status_code}"
        at_revoke = time.perf_counter()
        http_watch.ending.done.wait(at.bound)
        ws_watch.ending.done.wait(max(0.0, at.bound - (time.perf_counter() - at_revoke)))
        for name, ending in (("HTTP", http_watch.ending), ("WebSocket", ws_watch.ending)):
            seen[name] = (
                f"{ending.how} after {ending.at - at_revoke:.2f} s"
                if ending.at is not None
                else f"still open {at.bound:.0f} s after the revocation"
            )
        ends = [e.at for e in (http_watch.ending, ws_watch.ending) if e.at is not None]
        if len(ends) < 2:
            return AtLeast("a stream stayed open", at.bound)
        return "both streams closed", max(ends) - at_revoke

    try:
        attack = at.measure("revoke, then wait", revoke_then_wait, bound=at.bound + 15)
    finally:
        http_watch.close()
        ws_watch.close()
        session.close()
    with at.server.client("") as anonymous:
        headers = {"Authorization": f"Bearer {token}"}
        baseline = at.measure(
            "a new GET with the revoked token",
            lambda: send(anonymous, "GET", at.collection, headers=headers),
        )
    attack.extra.update(
        opened=opened,
        revoke=seen.get("revoke", ""),
        http=f"HTTP watch: {seen.get('HTTP', '?')}",
        ws=f"WebSocket watch: {seen.get('WebSocket', '?')}",
    )
    return [
        AbuseRow(
            "token revoked (console Tokens page) under an open HTTP and WebSocket watch",
            "(admin or owner action)",
            attack,
            baseline,
            "both closed within 5 s (ERROR 401 / close 4401)",
        )
    ]


def _locked(response: httpx.Response) -> bool:
    """A sign-in that no longer says "wrong password" (200, the form again) but refuses."""
    text = response.text.lower()
    return response.status_code not in (200, 302) or "locked" in text or "too many" in text


def _guesses(at: Attacks, path: str, user: str) -> Callable[[], str]:
    def guess() -> str:
        session = ConsoleSession(at.server.url, timeout=at.bound)
        try:
            for attempt in range(1, LOGIN_GUESSES + 1):
                response = session.login(user, f"wrong-{secrets.token_hex(4)}", path)
                if _locked(response):
                    return f"locked out at attempt {attempt} ({response.status_code})"
        finally:
            session.close()
        return f"no lockout in {LOGIN_GUESSES} attempts"

    return guess


def _right_password(at: Attacks, path: str, user: str) -> Callable[[], str]:
    def login() -> str:
        session = ConsoleSession(at.server.url, timeout=at.bound)
        try:
            return str(session.login(user, at.server.user(user)["password"], path).status_code)
        finally:
            session.close()

    return login


def login_guessing(at: Attacks) -> list[AbuseRow]:
    rows = []
    # The baselines sign in someone the page admits: any user on the console, staff on /admin.
    for path, user, where, right in (
        ("/login", "guessed", "console login", "viewer"),
        ("/admin/login/", "guessed-admin", "/admin/login", "admin"),
    ):
        baseline = at.measure(f"{right} signs in, right password", _right_password(at, path, right))
        rows.append(
            AbuseRow(
                f"password guessing on the {where}",
                "anyone, unauthenticated",
                at.measure(f"up to {LOGIN_GUESSES} wrong passwords", _guesses(at, path, user)),
                baseline,
                "lockout after a few failures, with a clear message",
            )
        )
    with at.server.client("") as anonymous:

        def guess_tokens() -> str:
            for attempt in range(1, TOKEN_GUESSES + 1):
                headers = {"Authorization": f"Bearer nodus_{secrets.token_urlsafe(32)}"}
                response = anonymous.get(at.collection, headers=headers)
                if response.status_code == 429:
                    after = response.headers.get("Retry-After", "none")
                    return f"429 at attempt {attempt} (Retry-After: {after})"
            return f"no 429 in {TOKEN_GUESSES} attempts ({answer(response)})"

        good = {"Authorization": f"Bearer {at.server.token('viewer')}"}
        baseline = at.measure(
            "one GET with a good token", lambda: send(anonymous, "GET", at.collection, headers=good)
        )
        rows.append(
            AbuseRow(
                "bearer-token guessing",
                "anyone, unauthenticated",
                at.measure(f"up to {TOKEN_GUESSES} wrong tokens", guess_tokens),
                baseline,
                "429 with Retry-After",
            )
        )
    return rows


def _p99(seconds: list[float]) -> float | None:
    if len(seconds) < 2:
        return seconds[0] if seconds else None
    return statistics.quantiles(seconds, n=100, method="inclusive")[98]


def _p99_text(seconds: list[float]) -> str:
    p99 = _p99(seconds)
    return "none answered" if p99 is None else f"{p99 * 1000:.0f} ms (n={len(seconds)})"


def _side_requests(at: Attacks, stop: threading.Event, limit: int) -> dict[str, list[float]]:
    """POST creates (the editor's) back to back, and /livez every 50 ms, each on its own thread,
    until `stop` or `limit` each; the seconds of those answered 201 and 200."""
    timings: dict[str, list[float]] = {"write": [], "livez": []}

    def keep(kind: str, method: str, url: str, pause: float) -> None:
        with at.client("editor") as editor:
            for i in range(limit):
                if stop.is_set():
                    return
                body = (
                    bodies.runtime(f"side-{time.monotonic_ns()}-{i}") if method == "POST" else None
                )
                started = time.perf_counter()
                if send(editor, method, url, json=body).startswith(("200", "201")):
                    timings[kind].append(time.perf_counter() - started)
                stop.wait(pause)

    threads = [
        threading.Thread(target=keep, args=("write", "POST", at.collection, 0.0)),
        threading.Thread(target=keep, args=("livez", "GET", "/livez", 0.05)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=at.bound * 2)
    return timings


def herd(at: Attacks) -> list[AbuseRow]:
    """200 lists at once from one client, with a writer and /livez beside them. The time is the
    p99 of the writes meanwhile; the baseline's, of 20 writes on the idle server."""
    idle: dict[str, list[float]] = {}

    def quiet() -> Answer:
        idle.update(_side_requests(at, threading.Event(), 20))
        return "writes and /livez alone", _p99(idle["write"]) or 0.0

    baseline = at.measure("write p99, idle", quiet, livez=False)
    during: dict[str, list[float]] = {}
    statuses: Counter[str] = Counter()
    took: list[float] = []

    def stampede() -> Answer:
        stop = threading.Event()
        side = threading.Thread(target=lambda: during.update(_side_requests(at, stop, 200)))
        side.start()
        token = at.server.token("viewer")
        path = at.collection

        async def lists() -> list[str]:
            calls = [get_status(HOST, at.server.port, path, token, at.bound) for _ in range(HERD)]
            return list(await asyncio.gather(*calls))

        started = time.perf_counter()
        try:
            # Waves of 200 for a few seconds, so the writes beside them are more than one or two.
            for _wave in range(HERD_WAVES):
                if time.perf_counter() - started > HERD_SECONDS:
                    break
                statuses.update(asyncio.run(asyncio.wait_for(lists(), at.bound + 5)))
        except TimeoutError:
            statuses["no answer within the bound"] += HERD
        finally:
            took.append(time.perf_counter() - started)
            stop.set()
            side.join(timeout=at.bound * 2)
        text = (
            f"{statuses.get('200', 0)} x 200, {statuses.get('429', 0)} x 429 of {statuses.total()}"
        )
        p99 = _p99(during.get("write", []))
        return text if p99 is None else (text, p99)

    attack = at.measure("write p99 under the herd", stampede, bound=at.bound * 3, livez=False)
    attack.extra.update(
        statuses=f"list answers: {dict(statuses)}, in waves of {HERD} "
        f"for {took[0] if took else 0:.1f} s",
        write=f"write p99: {_p99_text(during.get('write', []))} "
        f"vs idle {_p99_text(idle.get('write', []))}",
        livez=f"/livez p99: {_p99_text(during.get('livez', []))} "
        f"vs idle {_p99_text(idle.get('livez', []))}",
    )
    return [
        AbuseRow(
            f"{HERD} concurrent lists of {at.server.accounts.get('runtimes', '?')} runtimes "
            "(time: write p99)",
            "anyone who may list",
            attack,
            baseline,
            "429 past the seat limit; write and /livez p99 unharmed",
        )
    ]


ROWS: list[Callable[[Attacks], list[AbuseRow]]] = [slow_loris, revocation, herd]
GUESSING: list[Callable[[Attacks], list[AbuseRow]]] = [login_guessing]
