"""Accounts: API tokens (shown once), a kubeconfig download, projects and their members.

Actions a user may not take are not offered: members are managed only by admins of the project
(or platform admins), and a project always keeps at least one admin. Revoking a token and
removing a member first show a confirmation page (a GET, so it works without JavaScript); only
its POST acts. Every change that succeeds says what changed in a message.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from runtimes.accounts import access
from runtimes.accounts.kubeconfig import kubeconfig
from runtimes.accounts.tokens import create_token
from runtimes.accounts.tokens import revoke as revoke_token
from runtimes.console.authorization import hidden, requires
from runtimes.registry import authorization
from runtimes.storage.models import ApiToken, Membership, Project, Role

MANAGE = "manage-members"
# Tokens and kubeconfigs are the caller's own; the projects page lists what the caller may read.
OWN = authorization.signed_in("the caller's own tokens, kubeconfig and projects")


@requires(OWN)
def tokens(request: access.AuthenticatedHttpRequest) -> HttpResponse:
    new_token = ""
    problem = ""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        if not name or len(name) > 100:
            problem = "Give the token a name of 1 to 100 characters."
        else:
            _row, new_token = create_token(request.user, name)
            messages.success(request, f"Token {name} created: copy it now.")
    rows = ApiToken.objects.filter(user=request.user).order_by("-created_at")
    context = {"tokens": rows, "new_token": new_token, "problem": problem}
    return render(request, "console/accounts/tokens.html", context)


@requires(OWN)
@require_http_methods(["GET", "POST"])
def revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """GET asks for confirmation; POST revokes."""
    row = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    if row.revoked_at is not None:
        messages.info(request, f"Token {row.name} was already revoked.")
        return redirect("tokens")
    if request.method != "POST":
        return render(request, "console/accounts/revoke.html", {"token": row})
    revoke_token(row)
    messages.success(request, f"Token {row.name} revoked: it no longer signs anyone in.")
    return redirect("tokens")


@requires(OWN)
@require_POST
def download_kubeconfig(request: access.AuthenticatedHttpRequest) -> HttpResponse:
    text = kubeconfig(
        request.user, token_name="kubeconfig (console)", host=request.get_host().split(":")[0]
    )
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="nodus-kubeconfig.yaml"'
    return response


@requires(OWN)
def projects(request: access.AuthenticatedHttpRequest) -> HttpResponse:
    readable = access.readable_projects(request.user)
    rows = Project.objects.order_by("name")
    if readable is not None:
        rows = rows.filter(name__in=readable)
    roles = {p.name: access.role_in(request.user, p.name) for p in rows}
    listing = [
        {
            "project": p,
            "role": roles.get(p.name)
            or ("platform admin" if access.is_platform_admin(request.user) else "reader"),
            "can_manage": access.allowed(request.user, MANAGE, p.name),
        }
        for p in rows
    ]
    return render(request, "console/accounts/projects.html", {"projects": listing})


def _admins(project: Project) -> int:
    return Membership.objects.filter(project=project, role=Role.ADMIN).count()


def _change_members(request: HttpRequest, project: Project) -> str:
    """Applies one add / change / remove and says what changed; returns a problem, or ""."""
    action = request.POST.get("action")
    users = get_user_model().objects
    if action == "add":
        role = request.POST.get("role", Role.VIEWER)
        if role not in Role.values:
            return "Unknown role."
        group = request.POST.get("group", "").strip()[:150]
        if group:
            # A group binding (an OIDC provider's group): its members hold the role.
            Membership.objects.update_or_create(
                project=project, group=group, user=None, defaults={"role": role}
            )
            messages.success(request, f"Group {group} is now {role} in {project.name}.")
            return ""
        user = users.filter(username=request.POST.get("username", "").strip()).first()
        if user is None:
            return "No user with that name."
        Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
        messages.success(request, f"{user.get_username()} is now {role} in {project.name}.")
        return ""
    # No member id matches no membership (pk 0 is never handed out).
    membership = Membership.objects.filter(
        project=project, pk=request.POST.get("member") or 0
    ).first()
    if membership is None:
        return "That membership no longer exists."
    last_admin = membership.role == Role.ADMIN and _admins(project) == 1
    if action == "remove":
        if last_admin:
            return "A project keeps at least one admin."
        membership.delete()
        messages.success(request, f"Removed {membership.subject} from {project.name}.")
    elif action == "role":
        role = request.POST.get("role", "")
        if role not in Role.values:
            return "Unknown role."
        if last_admin and role != Role.ADMIN:
            return "A project keeps at least one admin."
        membership.role = role
        membership.save(update_fields=["role"])
        messages.success(request, f"{membership.subject} is now {role} in {project.name}.")
    return ""


@requires(authorization.role(MANAGE, authorization.MEMBERS), hidden("no such project"))
def members(request: HttpRequest, project: str) -> HttpResponse:
    row = get_object_or_404(Project, name=project)
    problem = ""
    if request.method == "POST":
        problem = _change_members(request, row)
        if not problem:
            return redirect("members", project)
    context: dict[str, Any] = {
        "project": row,
        "members": Membership.objects.filter(project=row)
        .select_related("user")
        .order_by("group", "user__username"),
        "roles": Role.choices,
        "problem": problem,
    }
    return render(request, "console/accounts/members.html", context)


@requires(authorization.role(MANAGE, authorization.MEMBERS), hidden("no such project"))
def confirm_remove(request: HttpRequest, project: str, member_id: int) -> HttpResponse:
    """Asks before removing a member; the form posts the removal to `members`."""
    row = get_object_or_404(Project, name=project)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=row, pk=member_id
    )
    context = {"project": row, "member": membership}
    return render(request, "console/accounts/remove_member.html", context)
