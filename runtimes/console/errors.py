"""Site-wide error pages for the console's (non-API) paths.

API paths never reach these: DRF's exception handler and the API's catch-all answer there with
a metav1.Status.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runtimes.accounts import access
from runtimes.console.runtime_page import RuntimeMissing


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    context: dict[str, object] = {"path": request.path}
    if isinstance(exception, RuntimeMissing):  # the user reads its project: name it
        context["missing"] = exception
        context["can_publish"] = access.allowed(request.user, "create", exception.project)
    return render(request, "console/404.html", context, status=404)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's 403 page for a refused cross-site form post; the reason goes on the request's
    one access log line (`runtimes.api.requestid`) rather than a log line of its own."""
    from django.views.csrf import csrf_failure as django_csrf_failure

    request.refused = reason  # type: ignore[attr-defined]
    return django_csrf_failure(request, reason)


def server_error(request: HttpRequest) -> HttpResponse:
    # No context processors that could fail again: the request may be half-broken.
    from django.template import loader

    # The request id (also in the X-Request-Id header) is what the log line of the failure names.
    template = loader.get_template("console/500.html")
    context = {"request_id": getattr(request, "request_id", "")}
    return HttpResponse(template.render(context), status=500)
