"""/healthz, /livez, /readyz and /metrics: the endpoints a load balancer and Prometheus ask.

Health answers anonymous callers, as kube-apiserver's do. /healthz, deprecated in kube since
1.16 but still what many probes ask, runs the checks kube's health endpoints all share, which
here are /livez's. /metrics answers callers on loopback (a Prometheus or agent beside the
worker), staff users (session or bearer token), or everyone when NODUS_METRICS_ANONYMOUS=1 (for
a scraper on a private network).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from runtimes.accounts.tokens import user_for
from runtimes.api import health
from runtimes.api import metrics as instruments
from runtimes.api.status import status_response
from runtimes.apimachinery import errors
from runtimes.registry import authorization
from runtimes.storage.models import RevisionCounter

_TEXT = "text/plain; charset=utf-8"
HEALTH = authorization.public("load balancers ask without credentials, as kube-apiserver's")


def _not_found(request: HttpRequest) -> HttpResponse:
    return status_response(request, errors.path_not_found())


def _exclusions(
    request: HttpRequest, checks: dict[str, health.CheckFn]
) -> tuple[set[str], list[str]]:
    wanted = set(request.GET.getlist("exclude"))
    return wanted & checks.keys(), sorted(wanted - checks.keys())


async def _all(
    request: HttpRequest, endpoint: str, checks: dict[str, health.CheckFn]
) -> HttpResponse:
    excluded, unknown = _exclusions(request, checks)
    results = await health.run_checks(checks, excluded)
    status, body = health.render(results, endpoint, "verbose" in request.GET, unknown)
    return HttpResponse(body, status=status, content_type=_TEXT)


async def _one(request: HttpRequest, checks: dict[str, health.CheckFn], name: str) -> HttpResponse:
    if name not in checks:
        return await sync_to_async(_not_found)(request)
    [result] = await health.run_checks({name: checks[name]})
    if result.ok:
        return HttpResponse("ok", content_type=_TEXT)
    return HttpResponse(f"[-]{name} failed: reason withheld\n", status=500, content_type=_TEXT)


@authorization.declare(HEALTH)
async def healthz(request: HttpRequest) -> HttpResponse:
    return await _all(request, "healthz", health.LIVEZ_CHECKS)


@authorization.declare(HEALTH)
async def healthz_check(request: HttpRequest, name: str) -> HttpResponse:
    return await _one(request, health.LIVEZ_CHECKS, name)


@authorization.declare(HEALTH)
async def livez(request: HttpRequest) -> HttpResponse:
    return await _all(request, "livez", health.LIVEZ_CHECKS)


@authorization.declare(HEALTH)
async def readyz(request: HttpRequest) -> HttpResponse:
    return await _all(request, "readyz", health.READYZ_CHECKS)


@authorization.declare(HEALTH)
async def livez_check(request: HttpRequest, name: str) -> HttpResponse:
    return await _one(request, health.LIVEZ_CHECKS, name)


@authorization.declare(HEALTH)
async def readyz_check(request: HttpRequest, name: str) -> HttpResponse:
    return await _one(request, health.READYZ_CHECKS, name)


def _loopback(request: HttpRequest) -> bool:
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def _caller(request: HttpRequest) -> Any:
    """The user behind a bearer token or the session; None when anonymous."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return user_for(token.strip())
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


def may_scrape(request: HttpRequest, caller: Any) -> bool:
    if settings.NODUS_METRICS_ANONYMOUS:
        return True
    return _loopback(request) or bool(getattr(caller, "is_staff", False))


@authorization.declare(
    authorization.own_rule("loopback, staff or NODUS_METRICS_ANONYMOUS: see may_scrape")
)
def metrics(request: HttpRequest) -> HttpResponse:
    caller = _caller(request)
    if not may_scrape(request, caller):
        who = caller.get_username() if caller is not None else "system:anonymous"
        return status_response(
            request,
            errors.ApiError(
                "Forbidden",
                f'forbidden: User "{who}" cannot get path "/metrics"',
                fix="Scrape from loopback, send a staff user's bearer token, or set "
                "NODUS_METRICS_ANONYMOUS=1 on the worker.",
            ),
        )
    counter = RevisionCounter.objects.filter(pk=1).values("value", "compacted").first()
    if counter is not None:
        instruments.EVENT_LOG_REVISION.set(counter["value"])
        instruments.EVENT_LOG_COMPACTED.set(counter["compacted"])
    lag = health.hub_lag()
    instruments.EVENT_LOG_LAG.set(-1 if lag is None else lag)
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)
