"""What a page should change when runtimes or jobs change: the fragments the websocket pushes.

Pure rendering over hub events, run off the event loop. A page says what it shows (its view,
its query, and the ids of the live elements it has); a batch of events becomes out-of-band swaps
of the *same* partials the pages render, drawn from the same context functions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.template.loader import render_to_string

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console import catalog, jobs, runtime_page
from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES
from runtimes.registry.resources import ResourceType
from runtimes.storage import store
from runtimes.storage.eventlog import deletion
from runtimes.watch.hub import HubEvent

# - the catalog: its whole `results` block (count, facet counts, rows in the page's sort, pager),
#   redrawn for the page's own query whenever a runtime it may read changes, so nothing there goes
#   stale and a new row lands where the sort puts it.
# - a runtime page: its header (and status panel); once the runtime is deleted, the deleted
#   header (when, if the log still knows) and the tabs turned off.
# - a project's Jobs page: likewise its whole `results` block (count, rows in the page's sort),
#   redrawn for the page's own filters whenever one of the project's jobs changes, so a job that
#   starts or stops matching (its phase moving from Pending to Compiled) appears or goes, the count
#   follows and a new job lands where the sort puts it; with it, the Runtime filter's options (a
#   runtime first named by a new job can be picked at once).
#
# Both are `Results` pages (`RESULTS_VIEWS`): sockets showing the same query of the same projects
# at the same revision share one render (`SharedRenders`).
#
# Every message ends with the revision marker (the revision the page is now current at, and the
# number of the watch it answers, so the page can drop a push meant for what it showed before).
# Nothing is sent for what the user may not read, not even a marker (its timing would tell that a
# project exists and when it is written): the socket drops changes in such projects before they
# make a push, and ignores a watch of a project the user may not read, as it ignores one of a
# project that does not exist. Runtime-authored text is escaped by the templates' autoescape.

# The partials the pages draw these elements with; the pushes render them with `oob` set.
RESULTS = "console/catalog.html#results"
JOB_RESULTS = "console/jobs/list.html#results"
HEADER = "_partials/_runtime_header.html"
TABS = "console/runtime/base.html#tabs"
STATUS = "console/runtime/status.html#status"
REVISION = "_partials/_live_revision.html"
NOTICE = "_partials/_live_notice.html"


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
        return self.sees((obj.get("metadata") or {}).get("namespace", ""))

    def sees(self, namespace: str) -> bool:
        """Whether changes in `namespace` may reach this page at all (even as a revision)."""
        return self.projects is None or namespace in self.projects

    def follows_readable(self) -> bool:
        """Whether the one project the page follows (if any) is one the user may read: a
        project they may not read and one that does not exist are alike, as on the pages."""
        namespace = namespace_of(self)
        return namespace is None or self.sees(namespace)


class SharedRenders:
    """The last few `results` blocks, by (view, scope, query, revision): a hundred tabs on the
    same view cost one render per change, not a hundred."""

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

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_RESULTS = SharedRenders()


def forget_renders() -> None:
    """Drops the shared renders (tests: a store recreated under a running process numbers its
    revisions from the start again, so an old render could answer for a new revision)."""
    _RESULTS.clear()


@dataclass(frozen=True)
class Results:
    """A page whose `results` block is redrawn whole, from the store, for the page's query.

    `scope` is what the block shows besides the query (the projects read, the project), and the
    key of the renders sockets share; None when the watch may see nothing of it. `shows` says
    whether a change is one the block may show, `context` what the partial draws now (with the
    revision it is current at)."""

    kind: ResourceType
    template: str
    scope: Callable[[Watch], Hashable | None]
    shows: Callable[[Watch, HubEvent], bool]
    context: Callable[[Watch], dict[str, Any]]


def catalog_scope(watch: Watch) -> Hashable:
    return "every project" if watch.projects is None else frozenset(watch.projects)


def catalog_context(watch: Watch) -> dict[str, Any]:
    objects, revision = catalog.readable_in(watch.projects)
    return catalog.results_context(objects, revision, watch.query)


def jobs_project(watch: Watch) -> str | None:
    """The project a Jobs page shows, if the user may read it (the page's own check: a project
    they may not read is shown as nothing at all)."""
    project = watch.query.get("namespace") or ""
    if not project or (watch.projects is not None and project not in watch.projects):
        return None
    return project


def jobs_shows(watch: Watch, event: HubEvent) -> bool:
    return event.namespace == jobs_project(watch) and watch.readable(event.object)


def jobs_context(watch: Watch) -> dict[str, Any]:
    project = jobs_project(watch) or ""
    objects, revision = store.list_objects(TRAINING_JOBS, project)
    return jobs.results_context(objects, revision, project, watch.query)


RESULTS_VIEWS = {
    "catalog": Results(
        TRAINING_RUNTIMES,
        RESULTS,
        catalog_scope,
        lambda watch, event: watch.readable(event.object),
        catalog_context,
    ),
    "jobs": Results(TRAINING_JOBS, JOB_RESULTS, jobs_project, jobs_shows, jobs_context),
}


def kind_of(view: str) -> ResourceType:
    """The kind whose changes a view follows."""
    results = RESULTS_VIEWS.get(view)
    return TRAINING_RUNTIMES if results is None else results.kind


def namespace_of(watch: Watch) -> str | None:
    """The one project a view follows, or None for every project the user may read."""
    return None if watch.view == "catalog" else watch.query.get("namespace") or None


def results_block(watch: Watch, results: Results, scope: Hashable) -> tuple[str, int]:
    """The page's `results` block for its query, now, and the revision it shows."""
    query = watch.query.urlencode()
    current = store.current_revision()
    shared = _RESULTS.get((watch.view, scope, query, current))
    if shared is not None:
        return shared, current
    context = results.context(watch)
    context["oob"] = True
    html = render_to_string(results.template, context)
    _RESULTS.put((watch.view, scope, query, context["revision"]), html)
    return html, int(context["revision"])


def results_fragments(
    watch: Watch, results: Results, events: list[HubEvent], fresh: bool
) -> list[str]:
    scope = results.scope(watch)
    if scope is None:
        return []  # nothing the user may read: nothing at all, not even an empty block
    # Any change the user may see moves the total or a count, if not a row: redraw.
    changed = fresh or any(e.revision > watch.rendered and results.shows(watch, e) for e in events)
    if not changed:
        return []
    html, revision = results_block(watch, results, scope)
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


def fragments(watch: Watch, events: list[HubEvent], fresh: bool = False) -> str:
    """One websocket message for a batch, or (`fresh`) the page's state redrawn from the store
    after its resume point was compacted away; always ends with the revision reached."""
    parts: list[str] = []
    results = RESULTS_VIEWS.get(watch.view)
    if results is not None:
        parts += results_fragments(watch, results, events, fresh)
    elif watch.view == "runtime":
        parts += runtime_fragments(watch, events, fresh)
    if fresh:
        parts.append(render_to_string(NOTICE, {"redrawn": True}))
    watch.rendered = max([watch.rendered, *(e.revision for e in events)])
    marker = {"revision": watch.rendered, "watch": watch.key, "oob": True}
    parts.append(render_to_string(REVISION, marker))
    return "\n".join(parts)


def missed_notice() -> str:
    return render_to_string(NOTICE, {"missed": True})
