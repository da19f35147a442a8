"""What a page should change when runtimes change: the fragments the websocket pushes.

Pure rendering over hub events, run off the event loop. A page says what it shows (its view,
its filters, and the ids of the live elements it has); each event becomes out-of-band swaps of
the *same* partials the pages render: a row appears, is replaced, or is removed; a runtime
page's header (and status panel) is redrawn. Nothing is sent for what the user may not read.
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
from runtimes.console.summaries import RuntimeSummary, summarize
from runtimes.watch.hub import HubEvent


@dataclass
class Watch:
    """One page's subscription: what it shows and what the user may read."""

    user: Any
    view: str  # "catalog" or "runtime"
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
        return [render_to_string("_partials/_runtime_row.html", {"s": summary, "oob": "true"})]
    if wanted and "runtime-rows" in watch.present:
        watch.present.add(row_id)
        row = render_to_string("_partials/_runtime_row.html", {"s": summary})
        return [f'<tbody hx-swap-oob="beforeend:#runtime-rows">{row}</tbody>']
    if shown:
        watch.present.discard(row_id)
        return [f'<tr id="{row_id}" hx-swap-oob="delete"></tr>']
    return []


def runtime_fragments(watch: Watch, event: HubEvent) -> list[str]:
    namespace, name = watch.query.get("namespace"), watch.query.get("name")
    if (event.namespace, event.name) != (namespace, name) or not watch.readable(event.object):
        return []
    if event.type == "DELETED":
        return [
            '<div id="runtime-header" hx-swap-oob="true"><p class="notice bad" role="alert">'
            "This runtime has been deleted.</p></div>"
        ]
    context = runtime_page.page_context(None, event.object, "", user=watch.user)
    context["oob"] = True
    out: list[str] = []
    if "runtime-header" in watch.present:
        out.append(render_to_string("_partials/_runtime_header.html", context))
    if "runtime-status" in watch.present:
        context.update(runtime_page.status(None, event.object))
        out.append(render_to_string("console/runtime/status.html#status", context))
    return out


def fragments(watch: Watch, events: list[HubEvent]) -> str:
    """One websocket message for a batch; always ends with the revision reached."""
    parts: list[str] = []
    for event in events:
        if watch.view == "catalog":
            parts += catalog_fragments(watch, event)
        elif watch.view == "runtime":
            parts += runtime_fragments(watch, event)
    revision = events[-1].revision if events else 0
    parts.append(
        f'<span id="live-revision" data-revision="{revision}" hidden hx-swap-oob="true"></span>'
    )
    return "\n".join(parts)


def missed_notice() -> str:
    return (
        '<div id="live-notice" class="live-notice" hx-swap-oob="true" role="alert">'
        'Some live updates were missed. <a href="">Reload</a> to catch up.</div>'
    )
