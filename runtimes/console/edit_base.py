"""The version an edit started from (its base), carried in the editor's form and signed.

A console write must name the resourceVersion it started from, and "re-apply my changes" needs
the object it started from, to tell the fields this tab changed from the ones others changed
meanwhile. Both travel in one hidden field, signed with the site's secret key
(``django.core.signing``, salted for this one purpose): a client cannot present a base the
server never served, so it cannot make a re-apply undo someone else's field by claiming the old
value was its starting point. The signed base is bound to the project, the name and the uid, so
a base served for one runtime (or for an earlier runtime of the same name) is refused for
another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core import signing

from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.threeway import same
from runtimes.console import manifests

# Why a signed copy rather than re-reading the base from the event log by its revision: the log
# is compacted in the background, so a tab left open for a while would lose its base exactly
# when the merge matters most, while the signed copy lasts as long as the tab does; and the
# signed copy costs no read. It holds only what the user was shown (the editable form, no
# status and no server-owned metadata), so it tells the client nothing it was not given.

_SALT = "nodus.console.publish.base"


@dataclass(frozen=True)
class Base:
    resource_version: str
    uid: str
    obj: Obj  # the editable form the editor was given


def sign(live: Obj) -> str:
    """The hidden field's value for an edit that starts from `live` (a stored object)."""
    meta = live["metadata"]
    payload = {
        "namespace": meta.get("namespace"),
        "name": meta["name"],
        "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"],
        "object": manifests.editable(live),
    }
    return signing.dumps(payload, salt=_SALT, compress=True)


def read(token: str, project: str, name: str) -> Base | None:
    """The base a form carries for runtime `project/name`, or None when it has none, or one
    that was not signed here or was signed for another runtime."""
    if not token:
        return None
    try:
        payload: Any = signing.loads(token, salt=_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict):
        return None
    if (payload.get("namespace"), payload.get("name")) != (project, name):
        return None
    return Base(str(payload["resourceVersion"]), str(payload["uid"]), payload["object"])


def is_current(base: Base, live: Obj) -> bool:
    """Whether `live` is still the version the edit started from, as far as an edit can see:
    the same object, with the same editable fields. A status written since (the controller's
    verdict) moves the resourceVersion but changes nothing the editor shows, so it is no
    conflict."""
    meta = live["metadata"]
    if base.uid != meta["uid"]:
        return False
    return base.resource_version == meta["resourceVersion"] or same(
        base.obj, manifests.editable(live)
    )
