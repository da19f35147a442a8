"""Which kind a resource URL names: its group from the path, its plural from the route.

kube-apiserver's RequestInfoFactory reads the API group off the path (`/api/v1/...` is the
core group, `/apis/GROUP/VERSION/...` any other) before it looks the resource up; the same
plural can be served by two groups (`events` in core/v1 and events.k8s.io/v1).
"""

from __future__ import annotations

from runtimes.registry.kinds import lookup
from runtimes.registry.resources import ResourceType


def group_of(path: str) -> str | None:
    """The group `path` is in: "" for /api/v1/..., GROUP for /apis/GROUP/..., else None."""
    parts = path.lstrip("/").split("/", 3)
    if parts[0] == "api":
        return ""
    if parts[0] == "apis" and len(parts) > 1:
        return parts[1]
    return None


def kind_for(path: str, plural: str) -> ResourceType | None:
    """The kind the generic routes serve as `plural` under `path`'s group and version, or
    None (a 404); kinds with views of their own (not `store_backed`) are never one."""
    group = group_of(path)
    if group is None:
        return None
    rt = lookup(plural, group)
    if rt is None or not rt.store_backed:
        return None
    parts = [*path.lstrip("/").split("/", 3), "", ""]
    version = parts[1] if group == "" else parts[2]
    return rt if version == rt.version else None
