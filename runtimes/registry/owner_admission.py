"""Who may set owner references: kube's OwnerReferencesPermissionEnforcement admission.

A write that sets or changes `metadata.ownerReferences` needs `delete` on the object itself
(whoever may delete it may hand its deletion to the garbage collector). A reference newly made
blocking (`blockOwnerDeletion: true`) holds up a foreground deletion of its owner, so it needs
`update` on the owner's `finalizers` subresource, as kube checks it: in our roles that is the
update verb of the owner's project (an editor there), and for a cluster-scoped owner (an
Accelerator) a platform admin. A reference to a kind we don't serve cannot be checked and is
refused when it blocks. kube-apiserver enables the plugin only when asked; we always do, since
without it anyone able to create a dependent could keep any owner from being deleted.
"""

from __future__ import annotations

from collections.abc import Callable

from runtimes.accounts.access import User, allowed
from runtimes.apimachinery import errors, ownership
from runtimes.apimachinery.meta import Obj
from runtimes.registry.kinds import for_reference
from runtimes.registry.resources import ResourceType

# Runs as the store's `on_prepared` hook, after defaulting and validation, inside the write's
# retry loop, so it judges the object the write would store against the one it replaces.

Hook = Callable[[Obj | None, Obj], Obj]


def _forbidden(rt: ResourceType, name: str, why: str, fix: str) -> errors.ApiError:
    # admission.NewForbidden: the authorizer's reason (empty for a role that does not allow)
    # and error (none) follow, as kube prints them.
    return errors.ApiError(
        "Forbidden",
        f'{rt.plural}.{rt.group} "{name}" is forbidden: {why}',
        {"name": name, "group": rt.group, "kind": rt.plural},
        fix=fix,
    )


def _unchanged(_old: Obj | None, new: Obj) -> Obj:
    return new


def admission(user: User, rt: ResourceType, namespace: str | None, then: Hook = _unchanged) -> Hook:
    """The store hook that checks owner references for `user`, then runs `then` (the API's
    managedFields recorder). Every face that writes for a user passes it: the API's views and
    the console's publish page."""
    project = (namespace or "") if rt.namespaced else ""

    def admit(old: Obj | None, new: Obj) -> Obj:
        if ownership.changes_owner_references(new, old):
            name = new["metadata"].get("name", "")
            if not allowed(user, "delete", project):
                raise _forbidden(
                    rt,
                    name,
                    "cannot set an ownerRef on a resource you can't delete: , <nil>",
                    "Only someone who may delete this object may set its ownerReferences.",
                )
            for ref in ownership.newly_blocking(new, old):
                _check_blocking(user, rt, name, project, ref)
        return then(old, new)

    return admit


def _check_blocking(user: User, rt: ResourceType, name: str, project: str, ref: Obj) -> None:
    api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
    owner = for_reference(api_version, kind)
    if owner is None:
        raise _forbidden(
            rt,
            name,
            "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
            f'APIVersion {api_version} Kind {kind}: , no matches for kind "{kind}" in version '
            f'"{api_version}"',
            "Leave blockOwnerDeletion unset for an owner of a kind this server does not serve.",
        )
    # An owner reference names an object in the dependent's namespace, or a cluster-scoped one.
    if not allowed(user, "update", project if owner.namespaced else "", "finalizers"):
        raise _forbidden(
            rt,
            name,
            "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't "
            "set finalizers on: , <nil>",
            "Leave blockOwnerDeletion unset, or have someone allowed to edit the owner "
            f"({owner.kind} {ref.get('name', '')!r}) make the reference blocking.",
        )
