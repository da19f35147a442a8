"""The catalog's facets, search, sort and paging, declared with django-filter.

The runtimes live as JSON in the store, not as model rows, so the FilterSet runs over a list of
`RuntimeSummary` values: django-filter's form machinery parses and validates the query string
(unknown choices are dropped, never an error page), and each filter filters Python objects.
Facet counts follow the usual faceted-search rule: a facet's counts apply every *other* facet,
so picking one value never hides its siblings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import django_filters
from django import forms
from django.http import QueryDict

from runtimes.console.summaries import RuntimeSummary
from runtimes.registry.trainingruntime import schema

PAGE_SIZE = 50

# facet name -> (label, the values a summary has for it)
FACETS: dict[str, tuple[str, Callable[[RuntimeSummary], Iterable[str]]]] = {
    "project": ("Project", lambda s: [s.namespace]),
    "task": ("Task", lambda s: [s.task]),
    "launcher": ("Launcher", lambda s: [s.launcher]),
    "mode": ("Mode", lambda s: s.modes),
    "phase": ("Phase", lambda s: [s.phase]),
    "managed": ("Managed", lambda s: ["yes" if s.managed else "no"]),
    "family": ("Accelerator family", lambda s: s.families),
    "model": ("Model", lambda s: s.models),
}
# Facets whose values the schema fixes; the others take whatever the objects carry.
FIXED_CHOICES: dict[str, tuple[str, ...]] = {
    "task": schema.TASKS,
    "launcher": schema.LAUNCHERS,
    "mode": schema.MODES,
    "phase": schema.PHASES,
    "managed": ("yes", "no"),
}


@dataclass(frozen=True)
class Sort[Row]:
    """A column a table sorts by; rows without a value (`has_value`) always come last.

    The catalog sorts `RuntimeSummary` rows by `SORTS`; the Jobs page its own rows by its own
    (`runtimes.console.jobs.JOB_SORTS`), through the same `parse_sort` and `sort_rows`."""

    label: str
    key: Callable[[Row], Any]
    has_value: Callable[[Row], bool] = lambda s: True


# `sort=name` sorts ascending, `sort=-name` descending; the column headers offer both.
SORTS: dict[str, Sort[RuntimeSummary]] = {
    "name": Sort("Name", lambda s: (s.name, s.namespace)),
    "project": Sort("Project", lambda s: (s.namespace, s.name)),
    "task": Sort("Task", lambda s: (s.task, s.name)),
    "launcher": Sort("Launcher", lambda s: (s.launcher, s.name)),
    "phase": Sort("Phase", lambda s: (s.phase, s.name)),
    "fastest": Sort(
        "Fastest estimate",
        lambda s: (s.fastest.seconds if s.fastest else 0.0, s.name),
        lambda s: s.fastest is not None,
    ),
}


def sort_choices(sorts: Mapping[str, Sort[Any]]) -> list[tuple[str, str]]:
    """The (value, label) pairs of a sort menu: each column ascending, then descending."""
    return [
        choice
        for key, sort in sorts.items()
        for choice in ((key, sort.label), (f"-{key}", f"{sort.label}, descending"))
    ]


SORT_CHOICES = sort_choices(SORTS)


def parse_sort(value: str | None, sorts: Mapping[str, Sort[Any]] = SORTS) -> tuple[str, bool]:
    """The column and whether it sorts descending; an unknown or missing sort is by name (every
    table's `sorts` has a "name")."""
    value = value or "name"
    column = value.removeprefix("-")
    if column not in sorts:
        return "name", False
    return column, value.startswith("-")


def sort_rows[Row](
    rows: Iterable[Row], value: str | None, sorts: Mapping[str, Sort[Row]]
) -> list[Row]:
    """`rows` in the order `value` (`name`, `-name`, ...) names; an unknown order is by name.
    Rows without a value for the column come last, by name, whichever the direction."""
    column, descending = parse_sort(value, sorts)
    sort = sorts[column]
    listed = list(rows)
    valued = sorted((r for r in listed if sort.has_value(r)), key=sort.key, reverse=descending)
    rest = sorted((r for r in listed if not sort.has_value(r)), key=sorts["name"].key)
    return valued + rest


class SummaryList(list[RuntimeSummary]):
    """A list that stands where django-filter expects a queryset."""

    model = None

    def all(self) -> SummaryList:
        return SummaryList(self)


class FacetFilter(django_filters.MultipleChoiceFilter):
    """Keeps summaries having any of the chosen values (OR within a facet)."""

    def filter(self, qs: Any, value: Any) -> Any:
        if not value:
            return qs
        chosen = set(value)
        values_of = FACETS[self.field_name][1]
        return SummaryList(s for s in qs if chosen.intersection(values_of(s)))


class SearchFilter(django_filters.CharFilter):
    """Every word must appear in the name, project, task, launcher, models, families or labels."""

    def filter(self, qs: Any, value: Any) -> Any:
        words = str(value or "").lower().split()
        if not words:
            return qs
        return SummaryList(s for s in qs if all(w in s.search_text() for w in words))


class NoopFilter(django_filters.ChoiceFilter):
    """Sort and page are parsed and validated here but applied after filtering."""

    def filter(self, qs: Any, value: Any) -> Any:
        return qs


class RuntimeFilterSet(django_filters.FilterSet):
    q = SearchFilter(label="Search", widget=forms.TextInput(attrs={"type": "search"}))
    project = FacetFilter(field_name="project", label="Project")
    task = FacetFilter(field_name="task", label="Task")
    launcher = FacetFilter(field_name="launcher", label="Launcher")
    mode = FacetFilter(field_name="mode", label="Mode")
    phase = FacetFilter(field_name="phase", label="Phase")
    managed = FacetFilter(field_name="managed", label="Managed")
    family = FacetFilter(field_name="family", label="Accelerator family")
    model = FacetFilter(field_name="model", label="Model")
    sort = NoopFilter(label="Sort", choices=SORT_CHOICES, empty_label=None)

    def __init__(self, data: QueryDict, summaries: list[RuntimeSummary]) -> None:
        super().__init__(data, queryset=SummaryList(summaries))
        for name in FACETS:
            observed = {v for s in summaries for v in FACETS[name][1](s)}
            if name in FIXED_CHOICES:
                values = list(FIXED_CHOICES[name])
            else:
                # A deep link to a value nothing carries right now shows no rows, not an error.
                values = sorted(observed | set(data.getlist(name)))
            self.filters[name].extra["choices"] = [(v, v) for v in values]

    def filter_queryset(self, queryset: Any) -> Any:
        for name, value in self.form.cleaned_data.items():
            queryset = self.filters[name].filter(queryset, value)
        return queryset

    def chosen(self) -> dict[str, list[str]]:
        data = self.form.cleaned_data if self.form.is_valid() else self._valid_data()
        return {name: list(data.get(name) or []) for name in FACETS}

    def _valid_data(self) -> dict[str, Any]:
        return {k: v for k, v in self.form.cleaned_data.items() if k not in self.form.errors}


@dataclass(frozen=True)
class FacetValue:
    value: str
    count: int
    chosen: bool


@dataclass(frozen=True)
class Facet:
    name: str
    label: str
    values: tuple[FacetValue, ...]

    @property
    def any_chosen(self) -> bool:
        return any(v.chosen for v in self.values)


def facets(filterset: RuntimeFilterSet) -> list[Facet]:
    """Each facet's values with the count of rows the other facets (and search) leave."""
    filterset.errors  # noqa: B018  (validates the form so cleaned_data exists)
    cleaned = filterset.form.cleaned_data
    result = []
    for name, (label, values_of) in FACETS.items():
        rows: Any = filterset.queryset.all()
        for other, value in cleaned.items():
            if other != name:
                rows = filterset.filters[other].filter(rows, value)
        counts: dict[str, int] = {}
        for row in rows:
            for value in set(values_of(row)):
                counts[value] = counts.get(value, 0) + 1
        chosen = set(cleaned.get(name) or [])
        choices = [c for c, _ in filterset.filters[name].extra["choices"]]
        values = tuple(
            FacetValue(v, counts.get(v, 0), v in chosen)
            for v in choices
            if counts.get(v) or v in chosen
        )
        result.append(Facet(name, label, values))
    return result


def sorted_rows(filterset: RuntimeFilterSet) -> list[RuntimeSummary]:
    rows = list(filterset.qs)  # validates the form: cleaned_data exists from here on
    return sort_rows(rows, filterset.form.cleaned_data.get("sort"), SORTS)
