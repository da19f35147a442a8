"""What a page should change when runtimes change: the fragments the websocket pushes.

Pure rendering over hub events, run off the event loop. A page says what it shows (its view,
its query, and the ids of the live elements it has); a batch of events becomes out-of-band swaps
of the *same* partials the pages render, drawn from the same context functions:

- the catalog: its whole `results` block (count, facet counts, rows in the page's sort, pager),
  redrawn for the page's own query whenever a runtime it may read changes, so nothing there goes
  stale and a new row lands where the sort puts it. Sockets showing the same query to the same
  projects at the same revision share one render (`RESULTS`).
- a runtime page: its header (and status panel); once the runtime is deleted, the deleted
  header (when, if the log still knows) and the tabs turned off.
- a project's Jobs page: its rows appear, change and go.

Every message ends with the revision marker (the revision the page is now current at, and the
number of the watch it answers, so the page can drop a push meant for what it showed before).
Nothing is sent for what the user may not read; runtime-authored text is escaped by the
templates' autoescape.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.template.loader import render_to_string

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console import runtime_page
from runtimes.console.catalog import readable_in, results_context
from runtimes.console.jobs import matches, summarize_job
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from runtimes.storage.eventlog import deletion
from runtimes.watch.hub import HubEvent

# The partials the pages draw these elements with; the pushes render them with `oob` set.
RESULTS = "console/catalog.html#results"
HEADER = "_partials/_runtime_header.html"
TABS = "console/runtime/base.html#tabs"
STATUS = "console/runtime/status.html#status"
JOB_ROW = "_partials/_job_row.html"
APPENDED_JOB_ROW = "console/jobs/list.html#appended_row"
REVISION = "_partials/_live_revision.html"
NOTICE = "_partials/_live_notice.html"
REDRAWN = ("catalog", "runtime")  # the views a push can redraw from scratch (after a 410)


@dataclass
class Watch:
    """One page's subscription: what it shows and what the user may read."""

    user: Any
    view: str  # "catalog", "runtime" or "jobs"
    query: QueryDict
    present: set[str] = field(default_factory=set)  # ids of live elements on the page
    projects: set[str] | None = None  # None: every project
    key: int = 0  # the page's number for this watch, echoed in every push
    rendered: int = 0  # the revision the page's state is current at
    gone: bool = False  # a runtime page whose runtime was deleted: nothing more to follow

    @classmethod
    def open(
        cls, user: Any, view: str, query: str, present: list[str], key: int = 0, revision: int = 0
    ) -> Watch:
        readable = access.readable_projects(user)
        projects = None if readable is None else set(readable)
        return cls(user, view, QueryDict(query), set(present), projects, key, revision)

    def readable(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        return self.projects is None or namespace in self.projects


class SharedRenders:
    """The last few catalog `results` blocks, by (projects, query, revision): a hundred tabs on
    the same view cost one render per change, not a hundred."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[Any, ...], str] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> str | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], html: str) -> None:
        with self._lock:
            self._items[key] = html
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_RESULTS = SharedRenders()


def catalog_results(watch: Watch) -> tuple[str, int]:
    """The catalog's `results` block for the page's query, now, and the revision it shows."""
    projects = None if watch.projects is None else frozenset(watch.projects)
    query = watch.query.urlencode()
    current = store.current_revision()
    shared = _RESULTS.get((projects, query, current))
    if shared is not None:
        return shared, current
    objects, revision = readable_in(watch.projects)
    context = results_context(objects, revision, watch.query)
    context["oob"] = True
    html = render_to_string(RESULTS, context)
    _RESULTS.put((projects, query, revision), html)
    return html, revision


def catalog_fragments(watch: Watch, events: list[HubEvent], fresh: bool) -> list[str]:
    # Any change the user may see moves the total or a facet count, if not a row: redraw.
    changed = fresh or any(e.revision > watch.rendered and watch.readable(e.object) for e in events)
    if not changed:
        return []
    html, revision = catalog_results(watch)
    watch.rendered = max(watch.rendered, revision)
    return [html]


def deleted_fragments(watch: Watch, namespace: str, name: str, revision: int | None) -> list[str]:
    """A runtime page whose runtime is gone: the deleted header and the tabs turned off."""
    watch.gone = True
    gone = {
        "project": namespace,
        "name": name,
        "deletion": deletion(TRAINING_RUNTIMES.key, namespace, name, revision),
    }
    tab = watch.query.get("tab", "")
    return [
        render_to_string(HEADER, {"gone": gone, "oob": True}),
        render_to_string(TABS, {"gone": gone, "tabs": runtime_page.TABS, "tab": tab, "oob": True}),
    ]


def runtime_fragments(watch: Watch, events: list[HubEvent], fresh: bool) -> list[str]:
    namespace, name = watch.query.get("namespace", ""), watch.query.get("name", "")
    if watch.gone or (watch.projects is not None and namespace not in watch.projects):
        return []
    mine = [
        e
        for e in events
        if (e.namespace, e.name) == (namespace, name) and e.revision > watch.rendered
    ]
    obj: Obj | None
    if fresh:
        watch.rendered = store.current_revision()
        try:
            obj = store.get(TRAINING_RUNTIMES, namespace, name)
        except errors.ApiError:
            return deleted_fragments(watch, namespace, name, None)
    elif not mine:
        return []
    elif mine[-1].type == "DELETED":
        return deleted_fragments(watch, namespace, name, mine[-1].revision)
    else:
        obj = mine[-1].object
    context = runtime_page.page_context(None, obj, watch.query.get("tab", ""), user=watch.user)
    context["oob"] = True
    out: list[str] = []
    if "runtime-header" in watch.present:
        out.append(render_to_string(HEADER, context))
    if "runtime-status" in watch.present:
        context.update(runtime_page.status(None, obj))
        out.append(render_to_string(STATUS, context))
    return out


def jobs_fragments(watch: Watch, event: HubEvent) -> list[str]:
    """A project's Jobs page: its rows appear, change and go as its jobs do."""
    if event.namespace != watch.query.get("namespace") or not watch.readable(event.object):
        return []
    summary = summarize_job(event.object)
    shown = summary.row_id in watch.present
    wanted = event.type != "DELETED" and matches(summary, watch.query)
    if wanted and shown:
        return [render_to_string(JOB_ROW, {"j": summary, "oob": "true"})]
    if wanted and "job-rows" in watch.present:
        watch.present.add(summary.row_id)
        return [render_to_string(APPENDED_JOB_ROW, {"j": summary})]
    if shown:
        watch.present.discard(summary.row_id)
        return [render_to_string(JOB_ROW, {"j": summary, "oob": "delete"})]
    return []


def fragments(watch: Watch, events: list[HubEvent], fresh: bool = False) -> str:
    """One websocket message for a batch, or (`fresh`) the page's state redrawn from the store
    after its resume point was compacted away; always ends with the revision reached."""
    parts: list[str] = []
    if watch.view == "catalog":
        parts += catalog_fragments(watch, events, fresh)
    elif watch.view == "runtime":
        parts += runtime_fragments(watch, events, fresh)
    elif watch.view == "jobs":
        for event in events:
            parts += jobs_fragments(watch, event)
    if fresh:
        parts.append(render_to_string(NOTICE, {"redrawn": True}))
    watch.rendered = max([watch.rendered, *(e.revision for e in events)])
    marker = {"revision": watch.rendered, "watch": watch.key, "oob": True}
    parts.append(render_to_string(REVISION, marker))
    return "\n".join(parts)


def missed_notice() -> str:
    return render_to_string(NOTICE, {"missed": True})
