"""The Jobs pages: a project's TrainingJobs, filtered and live, and one job's detail."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console import manifests, querylinks
from runtimes.console.authorization import hidden, requires
from runtimes.console.catalog import wants_partial
from runtimes.console.conditions import job_problems
from runtimes.console.filters import Sort, parse_sort, sort_choices, sort_rows
from runtimes.console.job_actions import edit_as_new_url
from runtimes.console.projects import CURRENT_PROJECT
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.registry.trainingjob.schema import PHASES
from runtimes.registry.trainingjob.strategy import format_duration
from runtimes.storage import store

# The list is one template for the full page and, on htmx filter changes, its `results` partial
# (count, sortable column headers and rows). When the project's jobs change, the websocket pushes
# that same partial, redrawn from `results_context` for the page's own query
# (`runtimes.console.live`), so the count stays true, a job that starts or stops matching the
# filters (a phase moving from Pending to Compiled) appears or goes, and a new job lands where the
# page's sort (`sort=` in the address, as on the catalog) puts it. The push also carries the
# Runtime filter's options, so a runtime first named by a new job can be picked without a reload.
# Visiting a project's Jobs page makes it the user's current project:
# the Parameters tab writes its manifest there.

NO_SUCH_JOB = hidden("no such job")


@dataclass(frozen=True)
class JobSummary:
    """One row of the Jobs page, from a stored job."""

    namespace: str
    name: str
    runtime: str
    runtime_namespace: str
    model: str
    method: str
    accelerator: str
    duration: str
    cost: str
    phase: str
    created: str
    seconds: float | None = None  # the compiled estimate's duration, unformatted
    cost_amount: float | None = None  # its cost in US dollars, unformatted
    revision: int = 0  # its resourceVersion: which of two jobs created in one second is newer

    @property
    def row_id(self) -> str:
        return f"job-{self.namespace}-{self.name}".replace(".", "-")

    @property
    def created_at(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.created)
        except ValueError:
            return None


def summarize_job(obj: Obj) -> JobSummary:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    compiled = status.get("compiled") or {}
    ref = spec.get("runtimeRef") or {}
    cost = compiled.get("cost")
    seconds = compiled.get("seconds")
    return JobSummary(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        runtime=str(ref.get("name", "")),
        runtime_namespace=str(ref.get("namespace") or meta.get("namespace", "")),
        model=str(spec.get("model") or ""),
        method=str(spec.get("method") or ""),
        accelerator=str(compiled.get("accelerator") or spec.get("accelerator") or ""),
        duration=format_duration(seconds),
        cost=f"${cost:,.2f}" if isinstance(cost, int | float) else "",
        phase=str(status.get("phase") or "Pending"),
        created=str(meta.get("creationTimestamp", "")),
        seconds=amount(seconds),
        cost_amount=amount(cost),
        revision=_revision(meta.get("resourceVersion")),
    )


def _revision(value: Any) -> int:
    text = str(value or "")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else 0


def amount(value: Any) -> float | None:
    """A duration or cost from the compiled plan, when it is a number not below zero."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def lifecycle(phase: str) -> int:
    """A phase's place in a job's life (Pending, Compiled, Invalid); an unknown one last."""
    return PHASES.index(phase) if phase in PHASES else len(PHASES)


# `sort=runtime` sorts ascending, `sort=-runtime` descending, as on the catalog; an unknown sort
# is by name. Jobs without a model, method, accelerator, duration or cost come last.
JOB_SORTS: dict[str, Sort[JobSummary]] = {
    "name": Sort("Name", lambda j: (j.name,)),
    "runtime": Sort("Runtime", lambda j: (j.runtime, j.runtime_namespace, j.name)),
    "model": Sort("Model", lambda j: (j.model, j.name), lambda j: bool(j.model)),
    "method": Sort("Method", lambda j: (j.method, j.name), lambda j: bool(j.method)),
    "accelerator": Sort(
        "Accelerator", lambda j: (j.accelerator, j.name), lambda j: bool(j.accelerator)
    ),
    "duration": Sort(
        "Duration", lambda j: (j.seconds or 0.0, j.name), lambda j: j.seconds is not None
    ),
    "cost": Sort(
        "Cost", lambda j: (j.cost_amount or 0.0, j.name), lambda j: j.cost_amount is not None
    ),
    "phase": Sort("Phase", lambda j: (lifecycle(j.phase), j.name)),
    # Ties within a second of creation: the later write first when newest first.
    "created": Sort("Created", lambda j: (j.created, j.revision, j.name)),
}
NEWEST_FIRST = "-created"
# The table's columns, in order: label, JOB_SORTS key, CSS class.
JOB_COLUMNS: tuple[tuple[str, str | None, str], ...] = (
    ("Name", "name", ""),
    ("Runtime", "runtime", ""),
    ("Model", "model", ""),
    ("Method", "method", ""),
    ("Accelerator", "accelerator", ""),
    ("Duration", "duration", "num"),
    ("Cost", "cost", "num"),
    ("Phase", "phase", ""),
    ("Created", "created", ""),
)


def matches(summary: JobSummary, query: Any) -> bool:
    """The page's filters: free text over name, model and runtime; runtime; phase."""
    text = str(query.get("q") or "").strip().lower()
    if text and not any(text in v.lower() for v in (summary.name, summary.model, summary.runtime)):
        return False
    runtime = str(query.get("runtime") or "")
    if runtime and summary.runtime != runtime:
        return False
    phase = str(query.get("phase") or "")
    return not (phase and summary.phase != phase)


def watch_query(project: str, query: QueryDict) -> str:
    """What the page's live watch asks for: its project, then its own filters (a `namespace` in
    the address does not choose another project)."""
    watched = QueryDict(mutable=True)
    watched["namespace"] = project
    for key, values in query.lists():
        if key != "namespace":
            watched.setlist(key, values)
    return watched.urlencode()


def runtime_choices(summaries: list[JobSummary], chosen: str) -> list[str]:
    """The Runtime filter's options: every runtime the project's jobs name, and the one the page
    filters by even when no job names it now (the menu says what the rows are filtered by)."""
    return sorted({s.runtime for s in summaries} | ({chosen} if chosen else set()))


def results_context(
    objects: list[Obj], revision: int, project: str, query: QueryDict
) -> dict[str, Any]:
    """What the `results` partial draws for `query`: the page and the live push alike."""
    summaries = [summarize_job(o) for o in objects]
    # Newest first unless the address names an order: a job just created is at the top.
    column, descending = parse_sort(query.get("sort") or NEWEST_FIRST, JOB_SORTS)
    sort = f"-{column}" if descending else column
    rows = sort_rows((s for s in summaries if matches(s, query)), sort, JOB_SORTS)
    # The headers link to the page's own address, which names its project in the path: the
    # watch query's `namespace` is not part of it (so the push draws the page's very links).
    address = query.copy()
    address.pop("namespace", None)
    runtime = str(query.get("runtime") or "")
    return {
        "project": project,
        "rows": rows,
        "total": len(summaries),
        "sort": sort,
        "headers": querylinks.headers(address, sort, JOB_COLUMNS, JOB_SORTS),
        "runtimes": runtime_choices(summaries, runtime),
        "runtime": runtime,
        "watch_query": watch_query(project, query),
        "revision": revision,
    }


@requires(authorization.role("list", TRAINING_JOBS))
@vary_on_headers("HX-Request")
def job_list(request: HttpRequest, project: str) -> HttpResponse:
    objects, revision = store.list_objects(TRAINING_JOBS, project)
    request.session[CURRENT_PROJECT] = project  # the project the user now works in
    context = results_context(objects, revision, project, request.GET)
    context.update(
        {
            "phases": PHASES,
            "sorts": sort_choices(JOB_SORTS),
            "q": request.GET.get("q", ""),
            "phase": request.GET.get("phase", ""),
        }
    )
    template = (
        "console/jobs/list.html#results" if wants_partial(request) else "console/jobs/list.html"
    )
    return render(request, template, context)


@requires(authorization.role("get", TRAINING_JOBS), NO_SUCH_JOB)
def job_detail(request: HttpRequest, project: str, name: str) -> HttpResponse:
    try:
        obj = store.get(TRAINING_JOBS, project, name)
    except errors.ApiError as exc:
        raise Http404("no such job") from exc
    status = obj.get("status") or {}
    compiled = status.get("compiled") or {}
    context = {
        "project": project,
        "obj": obj,
        "s": summarize_job(obj),
        "spec_yaml": manifests.dump(manifests.editable(obj)),
        "status": status,
        "compiled": compiled,
        "parameters_yaml": yaml.safe_dump(compiled.get("parameters") or {}, sort_keys=False),
        "provenance": sorted((compiled.get("provenance") or {}).items()),
        "offerings": [
            {
                **o,
                "duration": format_duration(o.get("seconds")),
                "cost_text": f"${o['cost']:,.2f}" if isinstance(o.get("cost"), int | float) else "",
            }
            for o in compiled.get("offerings") or []
        ],
        "can_edit": access.allowed(request.user, "update", project),
        "can_delete": access.allowed(request.user, "delete", project),
        "edit_as_new": edit_as_new_url(obj),
        "problems": job_problems(obj),
    }
    return render(request, "console/jobs/detail.html", context)


def compiled_against(runtime: Obj, user: Any) -> int:
    """How many jobs the user may read are compiled against this runtime."""
    meta = runtime["metadata"]
    key = (meta["namespace"], meta["name"])
    readable = access.readable_projects(user)
    objects, _revision = store.list_objects(TRAINING_JOBS)
    count = 0
    for obj in objects:
        s = summarize_job(obj)
        if readable is not None and s.namespace not in readable:
            continue
        if (s.runtime_namespace, s.runtime) == key and s.phase == "Compiled":
            count += 1
    return count
