"""Publishing (work in progress)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse


def _todo(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    raise Http404("not yet")


new = edit = delete = check = _todo
