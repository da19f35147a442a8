"""Who wrote what: the field managers of the server's own writers, and the recorder that keeps
``metadata.managedFields`` on every non-apply write, from the API, the seed, the controller and
the console alike (kube-apiserver's fieldmanager runs on every write, whoever makes it).

The server's own managers.
"""

from __future__ import annotations

from collections.abc import Callable

from runtimes.apimachinery import errors, managedfields
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.objectmeta import now_timestamp
from runtimes.registry.resources import ResourceType

# - ``nodus-seed``: the catalog seed (``manage.py seed``, startup seeding), operation Update.
# - ``nodus-controller``: the controller's status writes, operation Update, ``subresource: status``.
# - ``nodus-console:<username>``: a runtime published from the web console by that user, operation
#   Update. kube allows any printable manager of at most 128 bytes; the colon cannot appear in a
#   Django username, so the user is unambiguous, and the name is cut to stay within 128 bytes.

SEED = "nodus-seed"
CONTROLLER = "nodus-controller"
CONSOLE = "nodus-console"


def console_manager(username: str) -> str:
    """``nodus-console:alice``: the console's writes, told apart by the signed-in user."""
    name = f"{CONSOLE}:{username}"
    while len(name.encode()) > managedfields.MANAGER_MAX_LENGTH:
        name = name[:-1]
    return name


def set_entries(obj: Obj, entries: list[dict[str, object]]) -> None:
    """Stores the entries; none at all leaves the field out, as kube does."""
    if entries:
        obj["metadata"]["managedFields"] = entries
    else:
        obj["metadata"].pop("managedFields", None)


def recorder(rt: ResourceType, manager: str, subresource: str) -> Callable[[Obj | None, Obj], Obj]:
    """Records a create, update or patch in metadata.managedFields once the store has prepared
    the new object; managedFields the request carries are honoured as kube does
    (`managedfields.incoming_entries`) and what would be stored is validated (422)."""

    def record(old: Obj | None, new: Obj) -> Obj:
        live = (old or {}).get("metadata", {}).get("managedFields")
        requested = new["metadata"].get("managedFields")
        base = managedfields.incoming_entries(requested, live, subresource)
        entries = managedfields.record_update(
            base,
            manager,
            "Update",
            rt.api_version,
            old,
            new,
            subresource,
            now_timestamp(),
            list_map_keys=rt.merge_types,
        )
        problems = managedfields.validation_errors(entries)
        if problems:
            raise errors.invalid(rt.kind, rt.group, new["metadata"].get("name", ""), problems)
        set_entries(new, entries)
        return new

    return record
