"""Editing a runtime: a review before every write, and conflicts settled field by field.

An edit starts from a base (`edit_base`: the version the editor was given, signed into the
form). "Review and save" dry-runs the text against the latest version and lists each field the
write changes (``spec.launcher: Plain → Torchrun``); only the confirmation writes, naming the
base's resourceVersion, so a write made meanwhile is a conflict and is never undone silently.

A conflict shows what others changed since the base and what this tab changed, and offers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from runtimes.apimachinery import threeway
from runtimes.apimachinery.meta import SERVER_SET_METADATA, Obj
from runtimes.console import edit_base, manifests, publish
from runtimes.console.authorization import requires
from runtimes.console.runtime_page import load
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES

# - *re-apply my changes*: a three-way merge (`runtimes.apimachinery.threeway`): only the fields
#   this tab changed against its base go on top of the latest version, so an edit that changed
#   only comments changes nothing. A field both sides changed differently is shown with its three
#   values (yours, theirs, the base) and the user picks one per field, in a plain form;
# - *overwrite with mine*: the tab's whole text replaces the latest version; the page names the
#   changes of others this undoes;
# - *discard mine and reload*.
#
# Re-applying and overwriting end in the review, which carries the latest version as the new
# base, so the final save is again checked against anything written in between.

LOST_BASE = (
    "This editor no longer knows which version it started from (its form was incomplete or "
    "altered), so saving could undo changes made by others. Copy your text, reload the editor "
    "and make your change again."
)
CHANGED_AGAIN = (
    "The runtime changed again while you were choosing. Here is how things stand now: choose again."
)
PICK_EACH = "Pick one value for each field both of you changed."


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: str
    after: str


@dataclass(frozen=True)
class FieldConflict:
    path: str
    base: str
    mine: str
    theirs: str
    picked: str  # the side picked earlier, or ""


def shown(value: Any) -> str:
    """A field's value as the pages show it: strings bare, anything else as JSON."""
    if value is threeway.ABSENT:
        return "(not set)"
    if isinstance(value, str) and value:
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _changes(old: Any, new: Any) -> list[FieldChange]:
    found = threeway.diff(old, new, TRAINING_RUNTIMES.merge_types)
    return [FieldChange(c.path, shown(c.before), shown(c.after)) for c in found]


def _intent(parsed: Obj) -> Obj:
    """What the editor's text asks for: no status, no server-owned metadata (a stale
    resourceVersion left in the text is not an edit)."""
    body = {key: value for key, value in parsed.items() if key != "status"}
    meta = body.get("metadata")
    if isinstance(meta, dict):
        body["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_SET_METADATA}
    return body


@requires(authorization.role("update", TRAINING_RUNTIMES), publish.forbidden)
def edit(request: HttpRequest, project: str, name: str) -> HttpResponse:
    live = load(request, project, name)
    if request.method != "POST":
        text = manifests.dump(manifests.editable(live))
        return _editor(request, live, text, edit_base.sign(live))
    text = request.POST.get("manifest", "")
    token = request.POST.get("base", "")
    action = request.POST.get("action", "review")
    base = edit_base.read(token, project, name)
    if base is None:
        return _editor(request, live, text, "", publish.Verdict(False, [], LOST_BASE))
    if action == "edit":
        return _editor(request, live, text, token)
    parsed = manifests.parse(text)
    if isinstance(parsed, manifests.ParseError):
        verdict, _ = publish.evaluate(request, text, project, live, "", save=False)
        return _editor(request, live, text, token, verdict)
    mine = _intent(parsed)
    if action in ("merge", "overwrite"):
        return _resolve(request, live, base, text, mine, action)
    if not edit_base.is_current(base, live):
        return _conflict(request, live, base, text, mine)
    save = action == "save"
    rv = live["metadata"]["resourceVersion"]
    verdict, result = publish.evaluate(request, text, project, live, rv, save=save)
    if verdict.conflict:  # written between our read and this write
        return _conflict(request, load(request, project, name), base, text, mine)
    if result is None:
        return _editor(request, live, text, token, verdict)
    if save:
        messages.success(request, publish.published(result))
        return redirect("runtime", project, name, "status")
    return _review(request, live, text, result, verdict.warnings or [])


def _editor(
    request: HttpRequest,
    live: Obj,
    text: str,
    token: str,
    verdict: publish.Verdict | None = None,
) -> HttpResponse:
    context = publish.editor_context(
        request,
        text=text,
        project=live["metadata"]["namespace"],
        verdict=verdict,
        original=live,
        base=token,
    )
    return render(request, "console/publish/editor.html", context)


def _resolve(
    request: HttpRequest, live: Obj, base: edit_base.Base, text: str, mine: Obj, action: str
) -> HttpResponse:
    """Re-apply (merge) or overwrite, from the conflict page; both end in the review."""
    theirs = manifests.editable(live)
    # The choices were made against the version the conflict page showed; if it moved on,
    # they may no longer mean what the user meant.
    moved = request.POST.get("theirs", "") != live["metadata"]["resourceVersion"]
    if action == "overwrite":
        if moved:
            return _conflict(request, live, base, text, mine, note=CHANGED_AGAIN)
        lost = _lost(base.obj, mine, theirs)
        return _checked_review(request, live, text, overwrite=lost)
    picks = {
        key.removeprefix("pick:"): str(request.POST.get(key, ""))
        for key in request.POST
        if key.startswith("pick:") and not moved
    }
    merge = threeway.merge(base.obj, mine, theirs, TRAINING_RUNTIMES.merge_types, picks)
    if not merge.clean:
        # Only the conflict page asks for a merge: unresolved fields there lack a pick.
        note = CHANGED_AGAIN if moved else PICK_EACH
        return _conflict(request, live, base, text, mine, merge, picks, note)
    return _checked_review(request, live, manifests.dump(merge.merged), merged=True)


def _checked_review(
    request: HttpRequest,
    live: Obj,
    text: str,
    merged: bool = False,
    overwrite: list[FieldChange] | None = None,
) -> HttpResponse:
    """The review of `text` as a write on top of `live`, which becomes its base."""
    project = live["metadata"]["namespace"]
    rv = live["metadata"]["resourceVersion"]
    verdict, result = publish.evaluate(request, text, project, live, rv, save=False)
    if result is None:
        # The text is now meant for `live` (a merge was made on it, an overwrite chose it), so
        # `live` is its base: fixing it needs no second merge, and a write made meanwhile is
        # still a conflict when it is saved.
        return _editor(request, live, text, edit_base.sign(live), verdict)
    return _review(request, live, text, result, verdict.warnings or [], merged, overwrite)


def _review(
    request: HttpRequest,
    live: Obj,
    text: str,
    result: Obj,
    warnings: list[str],
    merged: bool = False,
    overwrite: list[FieldChange] | None = None,
) -> HttpResponse:
    context = {
        "original": live,
        "project": live["metadata"]["namespace"],
        "text": text,
        "base": edit_base.sign(live),
        "changes": _changes(manifests.editable(live), manifests.editable(result)),
        "warnings": warnings,
        "merged": merged,
        "overwrite": overwrite is not None,
        "lost": overwrite or [],
    }
    return render(request, "console/publish/review.html", context)


def _conflict(
    request: HttpRequest,
    live: Obj,
    base: edit_base.Base,
    text: str,
    mine: Obj,
    merge: threeway.Merge | None = None,
    picks: dict[str, str] | None = None,
    note: str = "",
) -> HttpResponse:
    theirs = manifests.editable(live)
    types = TRAINING_RUNTIMES.merge_types
    merge = merge or threeway.merge(base.obj, mine, theirs, types)
    picks = picks or {}
    conflicts = [
        FieldConflict(c.path, shown(c.base), shown(c.mine), shown(c.theirs), picks.get(c.path, ""))
        for c in merge.conflicts
    ]
    context = {
        "original": live,
        "project": live["metadata"]["namespace"],
        "text": text,
        "base": request.POST.get("base", ""),
        "base_version": base.resource_version,
        "theirs_version": live["metadata"]["resourceVersion"],
        "others": _changes(base.obj, theirs),
        "yours": _changes(base.obj, mine),
        "conflicts": conflicts,
        "lost": _lost(base.obj, mine, theirs),
        "note": note,
    }
    return render(request, "console/publish/conflict.html", context)


def _prefixes(path: str) -> list[str]:
    """`path` and every path that contains it (``a.b[x=1].c``: ``a``, ``a.b``, ...)."""
    cuts = [i for i, char in enumerate(path) if char in ".[" and i > 0]
    return [path[:i] for i in cuts] + [path]


def _lost(base: Obj, mine: Obj, theirs: Obj) -> list[FieldChange]:
    """The changes others made since `base` that writing `mine` over `theirs` would undo."""
    types = TRAINING_RUNTIMES.merge_types
    undone = {c.path for c in threeway.diff(theirs, mine, types)}
    within = {prefix for path in undone for prefix in _prefixes(path)}
    return [
        FieldChange(c.path, shown(c.before), shown(c.after))
        for c in threeway.diff(base, theirs, types)
        if c.path in within or any(prefix in undone for prefix in _prefixes(c.path))
    ]
