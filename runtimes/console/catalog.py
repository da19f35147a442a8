"""The catalog page: every runtime the user may read, filtered, searched, sorted and paged.

One template serves the full page and, for htmx filter changes, only its `results` partial; the
rows come from `_partials/_runtime_row.html`, the same fragment the websocket pushes.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from runtimes.accounts import access
from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import catalog as accelerator_catalog
from runtimes.console import querylinks
from runtimes.console.authorization import requires
from runtimes.console.filters import (
    PAGE_SIZE,
    SORT_CHOICES,
    RuntimeFilterSet,
    facets,
    parse_sort,
    sorted_rows,
)
from runtimes.console.summaries import summarize
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store


def readable_runtimes(user: Any) -> tuple[list[Obj], int]:
    """The runtimes `user` may read, across projects, and the revision they are current at."""
    objects, revision = store.list_objects(TRAINING_RUNTIMES)
    projects = access.readable_projects(user)
    if projects is not None:
        allowed = set(projects)
        objects = [o for o in objects if o["metadata"].get("namespace") in allowed]
    return objects, revision


def wants_partial(request: HttpRequest) -> bool:
    """htmx filter requests get the results only; boosts and history restores get pages."""
    htmx = getattr(request, "htmx", None)
    if not htmx:
        return False
    return not htmx.boosted and not htmx.history_restore_request


# A list across projects, as the API's: allowed to everyone signed in, holding only the projects
# each may read (readable_runtimes).
@requires(authorization.role("list", TRAINING_RUNTIMES))
@vary_on_headers("HX-Request")
def catalog(request: HttpRequest) -> HttpResponse:
    objects, revision = readable_runtimes(request.user)
    source = accelerator_catalog()
    summaries = [summarize(o, source) for o in objects]
    filterset = RuntimeFilterSet(request.GET, summaries)
    rows = sorted_rows(filterset)
    column, descending = parse_sort(filterset.form.cleaned_data.get("sort"))
    sort = f"-{column}" if descending else column
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "filterset": filterset,
        "facets": facets(filterset),
        "page": page,
        "total": len(summaries),
        "sorts": SORT_CHOICES,
        "sort": sort,
        "headers": querylinks.headers(request.GET, sort),
        "chips": querylinks.chips(request.GET, filterset),
        "clear_all": querylinks.clear_all(request.GET),
        "query": request.GET.urlencode(),
        "page_query": _without(request, "page"),
        "revision": revision,
        "can_publish": bool(access.writable_projects(request.user)),
    }
    template = "console/catalog.html#results" if wants_partial(request) else "console/catalog.html"
    return render(request, template, context)


def _without(request: HttpRequest, key: str) -> str:
    query = request.GET.copy()
    query.pop(key, None)
    return query.urlencode()
