"""The page a locked-out sign-in gets (django-axes calls `locked_out`; settings `AXES_*`).

After `AXES_FAILURE_LIMIT` failed sign-ins for one username from one address, the console's
sign-in and Django admin's both answer 429 with this page and a Retry-After header, until the
cool-off has passed. Other users, and the same user from another address, are not affected.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

TEMPLATE = "registration/locked_out.html"


def locked_out(
    request: HttpRequest, original_response: Any = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    cooloff = settings.AXES_COOLOFF_TIME
    seconds = max(1, math.ceil(cooloff.total_seconds()))
    context = {
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": max(1, math.ceil(seconds / 60)),
    }
    response = render(request, TEMPLATE, context, status=429)
    response["Retry-After"] = str(seconds)
    return response
