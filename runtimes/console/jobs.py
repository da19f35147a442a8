"""The Jobs pages: a project's TrainingJobs, filtered and live, and one job's detail.

The list is one template for the full page and, on htmx filter changes, its `results` partial
(count and rows). When the project's jobs change, the websocket pushes that same partial, redrawn
from `results_context` for the page's own query (`runtimes.console.live`), so the count stays
true and a job that starts or stops matching the filters (a phase moving from Pending to
Compiled) appears or goes. Visiting a project's Jobs page makes it the user's current project:
the Parameters tab writes its manifest there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from runtimes.accounts import access
from runtimes.accounts.kubeconfig import default_project
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console import manifests
from runtimes.console.authorization import hidden, requires
from runtimes.console.catalog import wants_partial
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.registry.trainingjob.schema import PHASES
from runtimes.registry.trainingjob.strategy import format_duration
from runtimes.storage import store

CURRENT_PROJECT = "nodus.project"
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

    @property
    def row_id(self) -> str:
        return f"job-{self.namespace}-{self.name}".replace(".", "-")


def summarize_job(obj: Obj) -> JobSummary:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    compiled = status.get("compiled") or {}
    ref = spec.get("runtimeRef") or {}
    cost = compiled.get("cost")
    return JobSummary(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        runtime=str(ref.get("name", "")),
        runtime_namespace=str(ref.get("namespace") or meta.get("namespace", "")),
        model=str(spec.get("model") or ""),
        method=str(spec.get("method") or ""),
        accelerator=str(compiled.get("accelerator") or spec.get("accelerator") or ""),
        duration=format_duration(compiled.get("seconds")),
        cost=f"${cost:,.2f}" if isinstance(cost, int | float) else "",
        phase=str(status.get("phase") or "Pending"),
        created=str(meta.get("creationTimestamp", "")),
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


def current_project(request: HttpRequest) -> str:
    """The project the user works in: the last Jobs page visited, else their first writable."""
    chosen = request.session.get(CURRENT_PROJECT) if hasattr(request, "session") else None
    if isinstance(chosen, str) and access.allowed(request.user, "create", chosen):
        return chosen
    return default_project(request.user)


def watch_query(project: str, query: QueryDict) -> str:
    """What the page's live watch asks for: its project, then its own filters (a `namespace` in
    the address does not choose another project)."""
    watched = QueryDict(mutable=True)
    watched["namespace"] = project
    for key, values in query.lists():
        if key != "namespace":
            watched.setlist(key, values)
    return watched.urlencode()


def results_context(
    objects: list[Obj], revision: int, project: str, query: QueryDict
) -> dict[str, Any]:
    """What the `results` partial draws for `query`: the page and the live push alike."""
    summaries = [summarize_job(o) for o in objects]
    rows = sorted((s for s in summaries if matches(s, query)), key=lambda s: s.name)
    return {
        "project": project,
        "rows": rows,
        "total": len(summaries),
        "watch_query": watch_query(project, query),
        "revision": revision,
    }


@requires(authorization.role("list", TRAINING_JOBS))
@vary_on_headers("HX-Request")
def job_list(request: HttpRequest, project: str) -> HttpResponse:
    objects, revision = store.list_objects(TRAINING_JOBS, project)
    if access.allowed(request.user, "create", project):
        request.session[CURRENT_PROJECT] = project
    context = results_context(objects, revision, project, request.GET)
    context.update(
        {
            "runtimes": sorted({summarize_job(o).runtime for o in objects}),
            "phases": PHASES,
            "q": request.GET.get("q", ""),
            "runtime": request.GET.get("runtime", ""),
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
