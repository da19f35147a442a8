"""Console views."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def catalog(request: HttpRequest) -> HttpResponse:
    return HttpResponse("nodus console")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return HttpResponse("not found", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return HttpResponse("error", status=500)
