"""Who may call an endpoint: one `Access` declared per view or consumer, one `check` for all.

Every URL the server answers declares what it asks of its caller, once, next to its code: a
class attribute `access` on API views and websocket consumers, `declare` or the console's
`requires` on function views. The declaration is one of the levels listed below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from runtimes.accounts.access import READ_VERBS, User, allowed, is_platform_admin
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import GROUP

# - `public(reason)`: anyone, signed in or not (health, /version, the docs pages);
# - `signed_in(reason)`: any signed-in caller (discovery and OpenAPI name kinds, not objects);
# - `own_rule(reason)`: the view applies a rule that is not about users' roles (/metrics);
# - `platform_admin(reason)`: platform admins (staff) only (the audit log);
# - `role(verbs, resource, subresource)`: a verb the caller's role must allow on the resource in
#   the project (namespace) the request names. `verbs` maps each request method to its verb, as
#   kube-apiserver's RBAC names them (GET item = get, PUT = update, PATCH = patch; a collection's
#   GET = list, or watch for `?watch=1` and WebSocket, the `WATCH` method). A `subresource` of
#   `status` makes its writes need the status permission (`accounts.access.may_write_status`):
#   the controller's service account and platform admins hold it, project roles do not.
#
# `check` decides for the HTTP views, the console pages and both websockets alike: 401
# Unauthorized, then 405 MethodNotAllowed for writes to read-only kinds, then 403 Forbidden,
# with the messages kube-apiserver gives. `tests/project/test_authorization_declarations.py`
# walks every HTTP and websocket route and fails on one that declares nothing.

Level = Literal["public", "signed-in", "own-rule", "platform-admin", "role"]

# The method a watch is checked as: a GET with ?watch=1 over HTTP, or a WebSocket.
WATCH = "WATCH"
# A verb mapped from ANY is the verb of every method.
ANY = "*"


class Resource(Protocol):
    """What the role check needs of a resource: every registered `ResourceType` is one."""

    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def read_only_fix(self) -> str: ...


@dataclass(frozen=True)
class ProjectResource:
    """Something of a project that is not a kind of the API, such as its membership."""

    kind: str
    plural: str
    group: str = GROUP
    namespaced: bool = True
    read_only: bool = False
    read_only_fix: str = ""


MEMBERS = ProjectResource("Membership", "members")


@dataclass(frozen=True, eq=False)
class Access:
    """What an endpoint asks of its caller; build one with the functions below."""

    level: Level
    reason: str = ""
    verbs: Mapping[str, str] = field(default_factory=dict)
    # None: the kind the URL names (the API's views serve every registered kind).
    resource: Resource | None = None
    subresource: str = ""

    @property
    def admits_anonymous(self) -> bool:
        return self.level in ("public", "own-rule")

    def verb(self, method: str) -> str | None:
        """The verb a request method needs; None for a method the endpoint does not serve."""
        method = "GET" if method == "HEAD" else method  # Django answers HEAD with the GET view
        return self.verbs.get(method, self.verbs.get(ANY))


def public(reason: str) -> Access:
    return Access("public", reason)


def signed_in(reason: str) -> Access:
    return Access("signed-in", reason)


def own_rule(reason: str) -> Access:
    return Access("own-rule", reason)


def platform_admin(reason: str) -> Access:
    return Access("platform-admin", reason)


def role(
    verbs: str | Mapping[str, str], resource: Resource | None = None, subresource: str = ""
) -> Access:
    """`verbs` is a verb for every method, or a map from request method (or `WATCH`) to verb."""
    mapping = {ANY: verbs} if isinstance(verbs, str) else dict(verbs)
    return Access("role", verbs=mapping, resource=resource, subresource=subresource)


def check(
    user: User,
    access: Access,
    method: str,
    namespace: str = "",
    name: str = "",
    kind: Resource | None = None,
) -> None:
    """Raises the Status `user` gets for this request of an endpoint declared with `access`.

    `kind` is the kind the URL names, for declarations that leave the resource to the URL.
    Until it is known (DRF's permission step runs before the view resolves the URL), only the
    caller is checked, so an anonymous caller gets 401 before any 404; the view checks again
    once it knows the kind. A method the declaration does not map needs only a signed-in
    caller: the view answers it 405, as kube-apiserver does.
    """
    if access.admits_anonymous:
        return
    if not user.is_authenticated:
        raise errors.ApiError("Unauthorized", "Unauthorized")
    if access.level == "platform-admin":
        if not is_platform_admin(user):
            raise errors.ApiError(
                "Forbidden", f'User "{user.get_username()}" is not a platform admin'
            )
        return
    verb = access.verb(method)
    resource = access.resource if access.resource is not None else kind
    if access.level == "signed-in" or verb is None or resource is None:
        return
    authorize(user, verb, resource, namespace, name, access.subresource)


def authorize(
    user: User, verb: str, rt: Resource, namespace: str, name: str = "", subresource: str = ""
) -> None:
    """The role check behind `check`: read-only kinds first, then the caller's role."""
    if rt.read_only and verb not in READ_VERBS:
        raise errors.method_not_supported(
            rt.plural,
            rt.group,
            verb,
            fix=rt.read_only_fix or f"{rt.kind} objects are read-only through the API.",
        )
    if not allowed(user, verb, namespace if rt.namespaced else "", subresource):
        raise errors.forbidden(
            user.get_username() if user.is_authenticated else "system:anonymous",
            verb,
            rt.plural,
            rt.group,
            namespace if rt.namespaced else "",
            name,
            subresource,
        )


View = TypeVar("View", bound=Callable[..., Any])


def declare(access: Access) -> Callable[[View], View]:
    """Attaches `access` to a function view whose callee checks it (or that needs no check)."""

    def attach(view: View) -> View:
        view.access = access  # type: ignore[attr-defined]
        return view

    return attach


def declared(callback: Any) -> Access | None:
    """The declaration of a URL's callback: a function view's, or its view or consumer class's."""
    for holder in (
        callback,
        getattr(callback, "view_class", None),
        getattr(callback, "consumer_class", None),
    ):
        access = getattr(holder, "access", None)
        if isinstance(access, Access):
            return access
    return None
