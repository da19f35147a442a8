"""What a page should change when runtimes change: the fragments the websocket pushes.

Pure rendering over hub events, run off the event loop. A page says what it shows (its view,
its filters, and the ids of the live elements it has); each event becomes out-of-band swaps of
the *same* partials the pages render: a row appears, is replaced, or is removed; a runtime
page's header (and status panel) is redrawn. Nothing is sent for what the user may not read.
No markup is written here: the out-of-band wrappers live in the templates beside what they swap
(the row's delete form, the catalog's `appended_row`, the header's deleted form, and the
revision marker and missed-updates notice that base.html draws from the same partials), and
runtime-authored text is escaped by the templates' autoescape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.template.loader import render_to_string

from runtimes.accounts import access
from runtimes.apimachinery.meta import Obj
from runtimes.console import runtime_page
from runtimes.console.filters import RuntimeFilterSet
from runtimes.console.jobs import matches, summarize_job
from runtimes.console.summaries import RuntimeSummary, summarize
from runtimes.watch.hub import HubEvent

# The partials the pages draw these elements with; the pushes render them with `oob` set.
ROW = "_partials/_runtime_row.html"
APPENDED_ROW = "console/catalog.html#appended_row"
HEADER = "_partials/_runtime_header.html"
STATUS = "console/runtime/status.html#status"
JOB_ROW = "_partials/_job_row.html"
APPENDED_JOB_ROW = "console/jobs/list.html#appended_row"
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

    @classmethod
    def open(cls, user: Any, view: str, query: str, present: list[str]) -> Watch:
        readable = access.readable_projects(user)
        return cls(
            user,
            view,
            QueryDict(query),
            set(present),
            None if readable is None else set(readable),
        )

    def readable(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        return self.projects is None or namespace in self.projects


def _matches(watch: Watch, summary: RuntimeSummary) -> bool:
    filterset = RuntimeFilterSet(watch.query, [summary])
    return bool(list(filterset.qs))


def catalog_fragments(watch: Watch, event: HubEvent) -> list[str]:
    after = None if event.type == "DELETED" else event.object
    after = after if watch.readable(after) else None
    summary = summarize(after or event.object)
    row_id = summary.row_id
    shown = row_id in watch.present
    wanted = after is not None and _matches(watch, summary)
    # What the page has (its live ids) decides between replace, append and remove, so a row
    # on another page of results is never appended twice nor removed from nowhere.
    if wanted and shown:
        return [render_to_string(ROW, {"s": summary, "oob": "true"})]
    if wanted and "runtime-rows" in watch.present:
        watch.present.add(row_id)
        return [render_to_string(APPENDED_ROW, {"s": summary})]
    if shown:
        watch.present.discard(row_id)
        return [render_to_string(ROW, {"s": summary, "oob": "delete"})]
    return []


def runtime_fragments(watch: Watch, event: HubEvent) -> list[str]:
    namespace, name = watch.query.get("namespace"), watch.query.get("name")
    if (event.namespace, event.name) != (namespace, name) or not watch.readable(event.object):
        return []
    if event.type == "DELETED":
        return [render_to_string(HEADER, {"deleted": True, "oob": True})]
    context = runtime_page.page_context(None, event.object, "", user=watch.user)
    context["oob"] = True
    out: list[str] = []
    if "runtime-header" in watch.present:
        out.append(render_to_string(HEADER, context))
    if "runtime-status" in watch.present:
        context.update(runtime_page.status(None, event.object))
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


def fragments(watch: Watch, events: list[HubEvent]) -> str:
    """One websocket message for a batch; always ends with the revision reached."""
    parts: list[str] = []
    for event in events:
        if watch.view == "catalog":
            parts += catalog_fragments(watch, event)
        elif watch.view == "runtime":
            parts += runtime_fragments(watch, event)
        elif watch.view == "jobs":
            parts += jobs_fragments(watch, event)
    revision = events[-1].revision if events else 0
    parts.append(render_to_string(REVISION, {"revision": revision, "oob": True}))
    return "\n".join(parts)


def missed_notice() -> str:
    return render_to_string(NOTICE, {"missed": True})
