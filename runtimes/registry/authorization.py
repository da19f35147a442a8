"""Authorization of API verbs on registered kinds: read-only kinds, then the caller's role."""

from __future__ import annotations

from runtimes.accounts.access import READ_VERBS, User, allowed
from runtimes.apimachinery import errors
from runtimes.registry.resources import ResourceType


def authorize(
    user: User, verb: str, rt: ResourceType, namespace: str, name: str = "", subresource: str = ""
) -> None:
    if rt.read_only and verb not in READ_VERBS:
        raise errors.ApiError(
            "MethodNotAllowed",
            f'{verb} is not supported on resources of kind "{rt.plural}.{rt.group}"',
            {"name": name, "group": rt.group, "kind": rt.plural},
            fix=f"{rt.kind} objects are read-only through the API; platform admins change the "
            "catalog file and reload it.",
        )
    if not allowed(user, verb, namespace if rt.namespaced else ""):
        raise errors.forbidden(
            user.get_username() if user.is_authenticated else "system:anonymous",
            verb,
            rt.plural,
            rt.group,
            namespace if rt.namespaced else "",
            name,
            subresource,
        )
