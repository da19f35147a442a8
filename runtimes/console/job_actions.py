"""What a job's page offers by role: recompile, delete (after a confirmation page, no script
needed) and "edit as new", the runtime's Parameters form filled from the job."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console.authorization import hidden, requires
from runtimes.console.job_form import TEXT_FIELDS
from runtimes.registry import authorization, fieldmanager
from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.registry.trainingjob.schema import RECOMPILE_ANNOTATION
from runtimes.storage import store

NO_SUCH_JOB = hidden("no such job")


def _job(project: str, name: str) -> Obj:
    try:
        return store.get(TRAINING_JOBS, project, name)
    except errors.ApiError as exc:
        raise Http404("no such job") from exc


def edit_as_new_url(job: Obj) -> str:
    """The runtime's Parameters tab with the job's inputs in its address (`forms.url_state`):
    its text and work fields, and its parameters' scalar values by their dotted paths."""
    spec = job.get("spec") or {}
    ref = spec.get("runtimeRef") or {}
    state: list[tuple[str, str]] = [
        (f"job.{name}", str(spec[name])) for name in TEXT_FIELDS if spec.get(name)
    ]
    for work in ("steps", "tasks"):
        if spec.get(work):
            state += [("job.work", work), ("job.amount", str(spec[work]))]
    nodes = (spec.get("distributed") or {}).get("nodes")
    if nodes:
        state.append(("job.nodes", str(nodes)))
    state += _scalars("p", spec.get("parameters") or {})
    namespace = ref.get("namespace") or job["metadata"]["namespace"]
    tab = reverse("runtime", args=[namespace, ref.get("name", ""), "parameters"])
    return f"{tab}?{urlencode(state)}"


def _scalars(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [pair for key, sub in value.items() for pair in _scalars(f"{prefix}.{key}", sub)]
    if isinstance(value, bool):
        return [(prefix, "true" if value else "false")]
    if isinstance(value, int | float | str):
        return [(prefix, str(value))]
    return []  # lists and nulls: the form offers them from the runtime's defaults


@requires(authorization.role({"POST": "update"}, TRAINING_JOBS), NO_SUCH_JOB)
def recompile(request: HttpRequest, project: str, name: str) -> HttpResponse:
    if request.method != "POST":
        return redirect("job", project, name)
    _job(project, name)
    stamp = str(int(time.time()))

    def change(current: Obj) -> Obj:
        current["metadata"].setdefault("annotations", {})[RECOMPILE_ANNOTATION] = stamp
        return current

    manager = fieldmanager.console_manager(request.user.get_username())
    store.mutate(
        TRAINING_JOBS,
        project,
        name,
        change,
        on_prepared=fieldmanager.recorder(TRAINING_JOBS, manager, ""),
    )
    messages.success(request, f"Asked {name} to compile again against its runtime as it is now.")
    return redirect("job", project, name)


@requires(authorization.role({"GET": "delete", "POST": "delete"}, TRAINING_JOBS), NO_SUCH_JOB)
def delete(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """GET asks for confirmation; POST deletes."""
    job = _job(project, name)
    if request.method != "POST":
        return render(request, "console/jobs/delete.html", {"project": project, "obj": job})
    store.delete(TRAINING_JOBS, project, name, uid=job["metadata"]["uid"])
    messages.success(request, f"Deleted job {name} from {project}.")
    return redirect("jobs", project)
