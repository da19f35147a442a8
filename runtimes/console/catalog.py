"""The catalog page: every runtime the user may read, filtered, searched, sorted and paged.

One template serves the full page and, for htmx filter changes, only its `results` partial
(count, facets, rows, pager). When runtimes change, the websocket pushes that same partial,
redrawn from `results_context` for the page's own query (`runtimes.console.live`), so the
count, the facet counts and each row's place under the page's sort stay true.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
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
    projects = access.readable_projects(user)
    return readable_in(None if projects is None else set(projects))


def readable_in(projects: set[str] | None) -> tuple[list[Obj], int]:
    """The runtimes in `projects` (None: every project) and the revision they are current at."""
    objects, revision = store.list_objects(TRAINING_RUNTIMES)
    if projects is not None:
        objects = [o for o in objects if o["metadata"].get("namespace") in projects]
    return objects, revision


def wants_partial(request: HttpRequest) -> bool:
    """htmx filter requests get the results only; boosts and history restores get pages."""
    htmx = getattr(request, "htmx", None)
    if not htmx:
        return False
    return not htmx.boosted and not htmx.history_restore_request


def results_context(objects: list[Obj], revision: int, query: QueryDict) -> dict[str, Any]:
    """What the `results` partial draws for `query`: the page and the live push alike."""
    source = accelerator_catalog()
    summaries = [summarize(o, source) for o in objects]
    filterset = RuntimeFilterSet(query, summaries)
    rows = sorted_rows(filterset)
    column, descending = parse_sort(filterset.form.cleaned_data.get("sort"))
    sort = f"-{column}" if descending else column
    page = Paginator(rows, PAGE_SIZE).get_page(query.get("page"))
    without_page = query.copy()
    without_page.pop("page", None)
    return {
        "filterset": filterset,
        "facets": facets(filterset),
        "page": page,
        "total": len(summaries),
        "sort": sort,
        "headers": querylinks.headers(query, sort),
        "chips": querylinks.chips(query, filterset),
        "clear_all": querylinks.clear_all(query),
        "query": query.urlencode(),
        "page_query": without_page.urlencode(),
        "revision": revision,
    }


# A list across projects, as the API's: allowed to everyone signed in, holding only the projects
# each may read (readable_runtimes).
@requires(authorization.role("list", TRAINING_RUNTIMES))
@vary_on_headers("HX-Request")
def catalog(request: HttpRequest) -> HttpResponse:
    objects, revision = readable_runtimes(request.user)
    context = results_context(objects, revision, request.GET)
    context["sorts"] = SORT_CHOICES
    context["can_publish"] = bool(access.writable_projects(request.user))
    template = "console/catalog.html#results" if wants_partial(request) else "console/catalog.html"
    return render(request, template, context)
