"""Failed bearer tokens are rate-limited per client address: 429 with Retry-After.

Every way a token comes in (the API's `Authorization` header, the HTTP watch, the WebSocket's
header or subprotocol) resolves it through `bearer_user`. An address that has sent
`NODUS_TOKEN_FAILURE_LIMIT` unknown or revoked tokens within `NODUS_TOKEN_FAILURE_WINDOW` seconds
is refused, before any lookup, until the oldest of those failures leaves the window: guessing
tokens costs the guesser time and the server nothing. A valid token from that address is
refused too while the limit holds (checking it first would let the guessing go on).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque

from django.conf import settings

from runtimes.accounts.access import User
from runtimes.accounts.tokens import user_for
from runtimes.apimachinery import errors

# The counts live in this process's memory, for at most `MAX_CLIENTS` addresses (the least recently
# failing are forgotten first), so a flood of addresses cannot grow them without bound; with
# several workers each counts its own. Console and admin sign-ins are limited separately, per user
# and address, by django-axes (settings: `AXES_*`).

FAILURE_LIMIT = 20
FAILURE_WINDOW_SECONDS = 60.0
MAX_CLIENTS = 10_000


class FailureLimiter:
    """Failures per client in a sliding window; `retry_after` says how long one must wait."""

    def __init__(self, limit: int, window: float, max_clients: int = MAX_CLIENTS) -> None:
        self.limit = limit
        self.window = window
        self.max_clients = max_clients
        self._lock = threading.Lock()
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        times = self._failures.get(client)
        if times is None:
            return None
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self._failures[client]
            return None
        return times

    def retry_after(self, client: str) -> int | None:
        """Seconds until `client` may try again; None when it may now."""
        now = time.monotonic()
        with self._lock:
            times = self._recent(client, now)
            if times is None or len(times) < self.limit:
                return None
            return max(1, math.ceil(self.window - (now - times[0])))

    def failed(self, client: str) -> None:
        now = time.monotonic()
        with self._lock:
            times = self._recent(client, now)
            if times is None:
                times = self._failures[client] = deque(maxlen=self.limit)
                while len(self._failures) > self.max_clients:
                    self._failures.popitem(last=False)
            else:
                self._failures.move_to_end(client)
            times.append(now)

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()


_limiter: FailureLimiter | None = None
_limiter_lock = threading.Lock()


def limiter() -> FailureLimiter:
    """This process's limiter for bearer tokens, made from the settings on first use."""
    global _limiter
    with _limiter_lock:
        if _limiter is None:
            _limiter = FailureLimiter(
                int(settings.NODUS_TOKEN_FAILURE_LIMIT),
                float(settings.NODUS_TOKEN_FAILURE_WINDOW),
            )
        return _limiter


def too_many_failures(retry_after: int) -> errors.ApiError:
    return errors.ApiError(
        "TooManyRequests",
        "Too many requests: too many failed bearer tokens from this address, please try again "
        f"in {retry_after} seconds",
        retry_after=retry_after,
        fix="Check the token your client sends (`kubectl config view --raw`); get a fresh one "
        "from the console's Tokens page, and retry after Retry-After seconds.",
    )


def bearer_user(token: str, client: str) -> User | None:
    """The token's user, None for an unknown or revoked token (a failure counted against
    `client`); raises 429 TooManyRequests while `client` is over the limit."""
    bucket = limiter()
    wait = bucket.retry_after(client)
    if wait is not None:
        raise too_many_failures(wait)
    user = user_for(token) if token else None
    if user is None:
        bucket.failed(client)
    return user
