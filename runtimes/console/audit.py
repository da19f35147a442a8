"""The audit log page: platform admins read the newest events, filtered by user, object and
verb (plain substring and equality filters; no user regex)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runtimes.accounts import auditlog
from runtimes.console.authorization import requires
from runtimes.registry import authorization

PAGE = 200
MAX_FILTER = 253


def _filters(request: HttpRequest) -> dict[str, str]:
    return {
        key: request.GET.get(key, "").strip()[:MAX_FILTER] for key in ("user", "object", "verb")
    }


def _matcher(filters: dict[str, str]) -> Any:
    user, obj, verb = filters["user"], filters["object"], filters["verb"].lower()

    def matches(event: dict[str, Any]) -> bool:
        if user and user not in str(event.get("user", {}).get("username", "")):
            return False
        if verb and verb != event.get("verb"):
            return False
        if obj:
            ref = event.get("objectRef") or {}
            named = "/".join(str(ref.get(k, "")) for k in ("namespace", "resource", "name"))
            if obj not in named:
                return False
        return True

    return matches


@requires(authorization.platform_admin("who did what: the audit log is for platform admins"))
def audit_log(request: HttpRequest) -> HttpResponse:
    filters = _filters(request)
    events = auditlog.newest(_matcher(filters), PAGE)
    context = {"events": events, "filters": filters, "limit": PAGE}
    return render(request, "console/audit.html", context)
