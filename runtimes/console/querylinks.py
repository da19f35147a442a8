"""Links that change one thing in a list page's query: clear a filter, sort by a column.

They are plain `?query` links, so they work without JavaScript; htmx boosts them like any other
link, and the URL keeps the whole view (filters, search and sort) as it already does. Every link
drops `page`: a changed filter or order starts again at page one. The catalog's chips and headers
are drawn here, and the Jobs page's headers too (with its own columns and sorts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from runtimes.console.filters import FACETS, SORTS, RuntimeFilterSet, Sort, parse_sort


@dataclass(frozen=True)
class Chip:
    """One active filter, with the query that clears only it."""

    label: str
    value: str
    clear: str


@dataclass(frozen=True)
class Header:
    """A column heading; sortable ones link to their order and say the current one."""

    label: str
    column: str | None
    aria_sort: str | None = None
    href: str = ""
    css: str = ""


# The catalog table's columns, in order: label, the SORTS key of a sortable one, CSS class.
COLUMNS: tuple[tuple[str, str | None, str], ...] = (
    ("Name", "name", ""),
    ("Project", "project", ""),
    ("Task", "task", ""),
    ("Launcher", "launcher", ""),
    ("Modes", None, ""),
    ("Phase", "phase", ""),
    ("Managed", None, ""),
    ("Models", None, ""),
    ("Accelerators", None, ""),
    ("Fastest", "fastest", "num"),
)


def _query(data: QueryDict, **changes: list[str]) -> str:
    query = data.copy()
    query.pop("page", None)
    for key, values in changes.items():
        query.setlist(key, values)
    # Empty fields (an empty search box submits q=) say nothing: the link leaves them out.
    for key in [k for k in query if not any(query.getlist(k))]:
        query.pop(key)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


def chips(data: QueryDict, filterset: RuntimeFilterSet) -> list[Chip]:
    """The search words and each chosen facet value, in the order the filters are listed."""
    found = []
    search = str(filterset.form.cleaned_data.get("q") or "").strip()
    if search:
        found.append(Chip("Search", search, _query(data, q=[])))
    for name, values in filterset.chosen().items():
        label = FACETS[name][0]
        for value in values:
            rest = [v for v in data.getlist(name) if v != value]
            found.append(Chip(label, value, _query(data, **{name: rest})))
    return found


def clear_all(data: QueryDict) -> str:
    """Every filter and the search cleared; the order stays."""
    sort = data.get("sort")
    return _query(QueryDict(), sort=[sort] if sort else [])


def headers(
    data: QueryDict,
    sort: str | None,
    columns: tuple[tuple[str, str | None, str], ...] = COLUMNS,
    sorts: Mapping[str, Sort[Any]] = SORTS,
) -> list[Header]:
    """Each column; a sortable one links to ascending, or to descending when it is ascending."""
    current, descending = parse_sort(sort, sorts)
    result = []
    for label, column, css in columns:
        if column is None or column not in sorts:
            result.append(Header(label, None, css=css))
            continue
        aria = None
        target = column
        if column == current:
            aria = "descending" if descending else "ascending"
            target = column if descending else f"-{column}"
        result.append(Header(label, column, aria, _query(data, sort=[target]), css))
    return result
