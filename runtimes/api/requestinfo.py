"""Which kind a resource URL names: its group from the path, its plural from the route.

kube-apiserver's RequestInfoFactory reads the API group off the path (`/api/v1/...` is the
core group, `/apis/GROUP/VERSION/...` any other) before it looks the resource up; the same
plural can be served by two groups (`events` in core/v1 and events.k8s.io/v1). It reads the
path trimmed of the slashes at its ends, so `.../trainingruntimes/` lists and `.../NAME/` gets,
as without them: `TrimmedPath` trims API paths before Django resolves them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest

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


def trimmed(path: str) -> str:
    """An API path (/api/..., /apis/...) without its trailing slashes; any other as it is."""
    if not path.endswith("/") or not path.startswith(("/api/", "/apis/")):
        return path
    return path.rstrip("/")


class TrimmedPath:
    """Django middleware: every later step (the URL resolver, the kind lookup, the metrics,
    the access log) sees an API path as kube's handlers do, without trailing slashes."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        path = trimmed(request.path_info)
        if path != request.path_info:
            cut = len(request.path_info) - len(path)
            request.path_info = path
            request.path = request.path[:-cut]
            request.META["PATH_INFO"] = path
        return self.get_response(request)
