"""The project a user works in: picked in the header and remembered in the session, else the
first they may write, else the first they read beside the managed catalog; and the projects a
job may be created in, never the managed catalog's for someone who merely reads it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from runtimes.accounts import access
from runtimes.console.authorization import requires
from runtimes.registry import authorization
from runtimes.storage.models import Project

CURRENT_PROJECT = "nodus.current_project"


def readable(user: Any) -> list[str]:
    projects = access.readable_projects(user)
    if projects is None:  # every project (platform admins)
        return list(Project.objects.order_by("name").values_list("name", flat=True))
    return projects


def job_projects(user: Any) -> list[str]:
    """Where the user may create jobs: their own projects first, the managed catalog last."""
    own = [p for p in access.writable_projects(user) if p != access.MANAGED_PROJECT]
    if access.allowed(user, "create", access.MANAGED_PROJECT):
        own.append(access.MANAGED_PROJECT)
    return own


def current_project(request: HttpRequest) -> str:
    user = request.user
    chosen = request.session.get(CURRENT_PROJECT) if hasattr(request, "session") else None
    projects = readable(user)
    if isinstance(chosen, str) and chosen in projects:
        return chosen
    writable = job_projects(user)
    if writable:
        return writable[0]
    others = [p for p in projects if p != access.MANAGED_PROJECT]
    return others[0] if others else access.MANAGED_PROJECT


def job_project(request: HttpRequest, asked: str = "") -> str | None:
    """The project a job from the Parameters form goes to: the one asked for on the form when
    the user may create jobs there, else the current project if they may, else their first;
    None when they may create jobs nowhere."""
    choices = job_projects(request.user)
    for candidate in (asked, current_project(request)):
        if candidate and candidate in choices:
            return candidate
    return choices[0] if choices else None


@requires(authorization.signed_in("the caller's own choice of project, among those they read"))
@require_POST
def pick(request: HttpRequest) -> HttpResponse:
    """The header's project picker: remembers the project and goes on where the user was (a
    Jobs page follows the pick)."""
    project = str(request.POST.get("project") or "")
    if project not in readable(request.user):
        return redirect("catalog")
    request.session[CURRENT_PROJECT] = project
    back = str(request.POST.get("next") or "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    if not back or "/jobs" in back:
        return redirect("jobs", project)
    return redirect(back)
