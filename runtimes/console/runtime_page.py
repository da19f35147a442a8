"""What every tab of the runtime page shares, and what the live push redraws.

Loading the runtime (a 404 when the user may not read it), the context of the header partial
every tab draws, and the context of the status panel: the tab views (`runtimes.console.runtime`,
`runtimes.console.parameters`, `runtimes.console.publish`) and the websocket's pushes
(`runtimes.console.live`) all render from here, so they draw the same partials from the same
context. It imports no tab, which keeps the tabs free to import it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console.authorization import hidden
from runtimes.console.conditions import runtime_problems
from runtimes.console.summaries import summarize
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from runtimes.storage.eventlog import deletion

TABS = (
    ("overview", "Overview"),
    ("presets", "Presets"),
    ("estimates", "Estimates"),
    ("parameters", "Parameters"),
    ("status", "Status"),
    ("yaml", "YAML"),
    ("history", "History"),
)
_FINGERPRINT = re.compile(r"trusted key (sha256:[0-9a-f]{16,})")
# What the tabs, the download and the parameter checks declare: they read the runtime their URL
# names, and a runtime the caller may not read is as missing as one that does not exist.
READ_RUNTIME = authorization.role("get", TRAINING_RUNTIMES)
NO_SUCH_RUNTIME = hidden("no such runtime")


class RuntimeMissing(Http404):
    """A 404 for a runtime the user may look for (they read its project): the page names it
    and, while the event log remembers, says when it was deleted."""

    def __init__(self, project: str, name: str) -> None:
        super().__init__("no such runtime")
        self.project = project
        self.name = name
        self.deletion = deletion(TRAINING_RUNTIMES.key, project, name)


def load(request: HttpRequest, project: str, name: str) -> Obj:
    """The runtime, or 404 (also when the user may not read its project: nothing leaks)."""
    if not access.allowed(request.user, "get", project):
        raise Http404("no such runtime")
    try:
        return store.get(TRAINING_RUNTIMES, project, name)
    except errors.ApiError as exc:
        raise RuntimeMissing(project, name) from exc


def page_context(
    request: HttpRequest | None, obj: Obj, tab: str, user: Any = None
) -> dict[str, Any]:
    """What every tab (and the live header push) needs; `user` stands in for a request's."""
    user = user if request is None else request.user
    meta = obj["metadata"]
    project = meta["namespace"]
    return {
        "obj": obj,
        "s": summarize(obj),
        "spec": obj.get("spec") or {},
        "status": obj.get("status") or {},
        "meta": meta,
        "tab": tab,
        "tabs": TABS,
        "can_edit": access.allowed(user, "update", project),
        "can_delete": access.allowed(user, "delete", project),
        "watch_query": urlencode({"namespace": project, "name": meta["name"], "tab": tab}),
        "revision": meta.get("resourceVersion", "0"),
        "problems": runtime_problems(obj),
    }


def status(request: HttpRequest | None, obj: Obj) -> dict[str, Any]:
    """The status panel's context: the Status tab's, and the live push's when it changes."""
    st = obj.get("status") or {}
    conditions = st.get("conditions") or []
    fingerprint = ""
    for condition in conditions:
        found = _FINGERPRINT.search(str(condition.get("message", "")))
        if found:
            fingerprint = found.group(1)
    annotations = obj["metadata"].get("annotations") or {}
    fingerprint = fingerprint or annotations.get("nodus.dev/signing-key-fingerprint", "")
    user = st.get("imageUser")
    runs_as_root = st.get("imageDigest") and (not user or user in ("root", "0", "0:0"))
    return {
        "conditions": conditions,
        "fingerprint": fingerprint,
        "runs_as_root": bool(runs_as_root),
        "stale": st.get("observedGeneration") != obj["metadata"].get("generation"),
    }
