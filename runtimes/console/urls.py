"""Console URLs: pages, their htmx partials, docs, and sign-in."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from runtimes.console import (
    accelerators,
    accounts,
    audit,
    catalog,
    compare,
    docs,
    editing,
    job_actions,
    jobs,
    oidc_signin,
    parameters,
    projects,
    publish,
    runtime,
)
from runtimes.console.authorization import requires
from runtimes.registry import authorization

# Django's own sign-in views: anyone may sign in or out.
SIGN_IN = requires(authorization.public("signing in and out"))

urlpatterns = [
    path("", catalog.catalog, name="catalog"),
    path("project", projects.pick, name="project-pick"),
    path("login", SIGN_IN(auth_views.LoginView.as_view()), name="login"),
    path("logout", SIGN_IN(auth_views.LogoutView.as_view()), name="logout"),
    path("audit", audit.audit_log, name="audit"),
    path("accounts/oidc/login", SIGN_IN(oidc_signin.start), name="oidc-login"),
    path("accounts/oidc/callback", SIGN_IN(oidc_signin.callback), name="oidc-callback"),
    path("docs/api", docs.api_reference, name="docs-api"),
    path("docs/errors", docs.error_index, name="docs-errors"),
    path("docs/errors/<str:reason>", docs.error_reason, name="docs-error"),
    path("p/<str:project>/runtimes/<str:name>", runtime.runtime_default, name="runtime-default"),
    path(
        "p/<str:project>/runtimes/<str:name>/yaml.download", runtime.download, name="runtime-yaml"
    ),
    path(
        "p/<str:project>/runtimes/<str:name>/parameters/check",
        parameters.check,
        name="runtime-parameters-check",
    ),
    path("p/<str:project>/runtimes/<str:name>/edit", editing.edit, name="publish-edit"),
    path("p/<str:project>/runtimes/<str:name>/delete", publish.delete, name="publish-delete"),
    path("p/<str:project>/runtimes/<str:name>/<str:tab>", runtime.runtime, name="runtime"),
    path("p/<str:project>/jobs", jobs.job_list, name="jobs"),
    path("p/<str:project>/jobs/<str:name>", jobs.job_detail, name="job"),
    path(
        "p/<str:project>/jobs/<str:name>/recompile",
        job_actions.recompile,
        name="job-recompile",
    ),
    path("p/<str:project>/jobs/<str:name>/delete", job_actions.delete, name="job-delete"),
    path("compare", compare.compare, name="compare"),
    path("accelerators", accelerators.accelerator_list, name="accelerators"),
    path("publish", publish.new, name="publish-new"),
    path("publish/check", publish.check, name="publish-check"),
    path("account/tokens", accounts.tokens, name="tokens"),
    path("account/tokens/<int:token_id>/revoke", accounts.revoke, name="token-revoke"),
    path("account/kubeconfig", accounts.download_kubeconfig, name="kubeconfig"),
    path("projects", accounts.projects, name="projects"),
    path("projects/<str:project>/members", accounts.members, name="members"),
    path(
        "projects/<str:project>/members/<int:member_id>/remove",
        accounts.confirm_remove,
        name="member-remove",
    ),
]
