"""The runtime page (work in progress)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse


def _todo(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    raise Http404("not yet")


runtime_default = runtime = download = estimates_chart = parameters_check = _todo
