"""Template context for every console page: which navigation actions the user may take.

Registered as a context processor (``runtimes.console.context.console``) so base.html offers
"Publish" only to users who can publish somewhere, and "Jobs" for their current project;
without them the links simply are not shown.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from runtimes.accounts import access
from runtimes.accounts.oidcconfig import config
from runtimes.console.projects import current_project, readable


def console(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    oidc_enabled = config() is not None
    if user is None or not user.is_authenticated:
        return {"nav": {}, "oidc_enabled": oidc_enabled}
    return {
        "oidc_enabled": oidc_enabled,
        "nav": SimpleLazyObject(
            lambda: {
                "can_publish": bool(access.writable_projects(user)),
                "can_audit": access.is_platform_admin(user),
                "jobs_project": current_project(request),
                "projects": readable(user),
            }
        ),
    }
