"""Who may do what: roles per project, platform admins, the controller, the managed project.

Viewers get, list and watch; editors also create, update, patch and delete; admins also manage
membership. A role binding names a user or a group (an OIDC caller's groups, `groups_of`); a
caller holds the strongest role bound to it or to any of its groups. Every authenticated user
may read the managed project `nodus`; only platform admins
(staff) write there. Cluster-scoped kinds (the accelerator catalog) are readable by everyone
signed in and writable by nobody through the API.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.auth.models import User as AccountUser
from django.db.models import Q
from django.http import HttpRequest

from runtimes.accounts import revocation
from runtimes.accounts.memo import EpochMemo
from runtimes.storage.models import Membership, Project, Role

# Status is the controller's: writing a `status` subresource needs the status permission, which
# only the controller's service account (`CONTROLLER_ACCOUNT`, see `accounts.serviceaccounts`) and
# platform admins hold; project admins and editors are refused, as kube's RBAC refuses a Role
# without `trainingruntimes/status`. The controller's account reads every project and, through
# the API, writes nothing else. Its garbage collector also updates owner references and GC
# finalizers and deletes dependents whose owners are gone (what kube's
# `system:controller:generic-garbage-collector` role allows); those writes are checked as the
# pseudo-subresource `COLLECTOR_SUBRESOURCE`, which no URL serves, so the same token cannot
# change a spec or delete through the API.

MANAGED_PROJECT = "nodus"
# The controller's own identity, named as kube names a service account's user.
CONTROLLER_ACCOUNT = "system:serviceaccount:nodus:controller"
# The subresources whose writes need the status permission.
STATUS_SUBRESOURCES = frozenset({"status"})
READ_VERBS = frozenset({"get", "list", "watch"})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# The garbage collector's writes (owner references, GC finalizers, deleting dependents), as
# the controller's account: checked as this subresource, which no URL serves.
COLLECTOR_SUBRESOURCE = "garbagecollection"
COLLECTOR_VERBS = frozenset({"update", "delete"})
ROLE_VERBS = {
    Role.VIEWER: READ_VERBS,
    Role.EDITOR: READ_VERBS | WRITE_VERBS,
    Role.ADMIN: READ_VERBS | WRITE_VERBS | {"manage-members"},
}

User = AbstractBaseUser | AnonymousUser
# (user pk, groups, project) -> role, while access is unchanged (accounts.memo).
_roles = EpochMemo()
# The strongest role first: a user bound directly and through groups holds the strongest.
_STRENGTH = {Role.ADMIN: 3, Role.EDITOR: 2, Role.VIEWER: 1}


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view behind `login_required`, whose user is signed in.

    Only an annotation: Django still builds plain HttpRequests. It tells the type checker what
    `login_required` guarantees, so such views pass `request.user` where a user is needed.
    """

    user: AccountUser


def is_platform_admin(user: User) -> bool:
    return bool(user.is_authenticated and getattr(user, "is_staff", False))


def is_controller(user: User) -> bool:
    """The controller's service account (active: `tokens.user_for` admits no other)."""
    return bool(
        user.is_authenticated and user.get_username() == CONTROLLER_ACCOUNT and user.is_active
    )


def may_write_status(user: User) -> bool:
    """The status permission (RBAC's `trainingruntimes/status`): the controller and staff."""
    return is_controller(user) or is_platform_admin(user)


def groups_of(user: User) -> tuple[str, ...]:
    """The groups an OIDC caller's ID token named (prefix included); () for everyone else."""
    return tuple(getattr(user, "nodus_groups", ()))


def _bindings(user: User) -> Q:
    """The role bindings that apply to `user`: its own and its groups'."""
    # An anonymous caller has no pk, and `user_id=None` would match every group binding.
    mine = Q(user_id=user.pk) if user.pk is not None else Q(pk__in=[])
    groups = groups_of(user)
    return mine | Q(group__in=groups) if groups else mine


def role_in(user: User, project: str) -> str | None:
    """The strongest role `user` holds in `project`, directly or through a group."""
    if not user.is_authenticated:
        return None
    epoch = revocation.current()
    key = (user.pk, groups_of(user), project)
    role: str | None = _roles.get(key)
    if role is None:
        roles = Membership.objects.filter(_bindings(user), project_id=project).values_list(
            "role", flat=True
        )
        role = max(roles, key=lambda r: _STRENGTH[Role(r)], default=None)
        _roles.put(key, role, epoch)
    return role


def allowed(user: User, verb: str, project: str, subresource: str = "") -> bool:
    """Whether `user` may use `verb` on objects (or their `subresource`) in `project` ("" =
    cluster scope)."""
    if not user.is_authenticated:
        return False
    if subresource in STATUS_SUBRESOURCES and verb not in READ_VERBS:
        return may_write_status(user)
    if is_platform_admin(user):
        return True
    if subresource == COLLECTOR_SUBRESOURCE:
        return is_controller(user) and verb in COLLECTOR_VERBS
    if is_controller(user):
        return verb in READ_VERBS
    if project == "":
        return verb in READ_VERBS
    if project == MANAGED_PROJECT and verb in READ_VERBS:
        return True
    if project == MANAGED_PROJECT:
        return False
    role = role_in(user, project)
    return role is not None and verb in ROLE_VERBS[Role(role)]


def readable_projects(user: User) -> list[str] | None:
    """The projects whose objects `user` may read; None means all of them."""
    if is_platform_admin(user) or is_controller(user):
        return None
    # An anonymous user matches no membership; django-stubs can't know the user model is ours.
    names = set(Membership.objects.filter(_bindings(user)).values_list("project_id", flat=True))
    names.add(MANAGED_PROJECT)
    return sorted(names)


def writable_projects(user: User) -> list[str]:
    if is_platform_admin(user):
        return list(Project.objects.order_by("name").values_list("name", flat=True))
    return sorted(
        Membership.objects.filter(_bindings(user), role__in=[Role.EDITOR, Role.ADMIN])
        .exclude(project_id=MANAGED_PROJECT)
        .values_list("project_id", flat=True)
    )
