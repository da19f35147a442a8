"""Publishing: create, check and delete runtimes in a YAML editor.

As the user types, `check` dry-runs the write through the store (the same strategy as the
API, nothing stored) and shows each Status cause beside the line of its field, plus the diff
against the stored version. Editing a stored runtime (a review before the write, conflicts
settled field by field) is `runtimes.console.editing`'s; it writes through `evaluate` too.
Only editors of a project see these pages; project `nodus` only platform admins.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.console import edit_base, manifests
from runtimes.console.authorization import requires
from runtimes.console.runtime_page import NO_SUCH_RUNTIME, load
from runtimes.registry import authorization, fieldmanager, owner_admission
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.registry.openapi_schemas import component, component_schemas, ref
from runtimes.storage import store

# The code editor, built from frontend/editor.js by `npm run build` (not committed).
EDITOR_BUNDLE = "console/editor.js"


@dataclass(frozen=True)
class Cause:
    field: str
    message: str
    line: int | None


@dataclass
class Verdict:
    ok: bool = False
    causes: list[Cause] | None = None
    message: str = ""
    warnings: list[str] | None = None
    diff: list[manifests.DiffLine] | None = None
    conflict: bool = False


# A new runtime's editor offers only projects the caller may write; the project comes with the
# form, so its role is checked with the manifest (evaluate).
PROJECT_FROM_FORM = authorization.signed_in("the project comes with the form: see evaluate")


def forbidden(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """The page for a runtime the caller may read but not change; one it may not read is 404."""
    load(request, project, name)
    return render(request, "console/publish/forbidden.html", status=403)


def editor_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    return {
        "projects": access.writable_projects(request.user),
        "editor_schema": editor_schema(),
        "editor_bundle": editor_bundle(),
        **extra,
    }


@functools.cache
def editor_schema() -> dict[str, Any]:
    """What the code editor completes and explains from: the TrainingRuntime's OpenAPI schema
    (the same components /openapi/v3 publishes) and where its root is."""
    components = component_schemas([TRAINING_RUNTIMES])
    return {"root": ref(component(TRAINING_RUNTIMES)), "components": components}


def editor_bundle() -> bool:
    """Whether the code editor was built (`npm run build`); without it the manifest is a plain
    text area."""
    return finders.find(EDITOR_BUNDLE) is not None


def _verdict_from_error(exc: errors.ApiError, text: str) -> Verdict:
    causes = [Cause(c.field, c.message, manifests.line_of(text, c.field)) for c in exc.causes]
    return Verdict(False, causes, exc.message, conflict=exc.reason == "Conflict")


def evaluate(
    request: HttpRequest, text: str, project: str, original: Obj | None, rv: str, save: bool
) -> tuple[Verdict, Obj | None]:
    """Parses and writes (or dry-runs) the text; returns the verdict and the stored object."""
    parsed = manifests.parse(text)
    if isinstance(parsed, manifests.ParseError):
        return Verdict(False, [Cause("", parsed.message, parsed.line)], parsed.message), None
    body: Obj = parsed
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    if meta.get("namespace") not in (None, "", project):
        cause = Cause(
            "metadata.namespace", f"must be {project!r}, the project you publish to", None
        )
        cause = Cause(cause.field, cause.message, manifests.line_of(text, cause.field))
        return Verdict(False, [cause], "the manifest names another project"), None
    verb = "update" if original else "create"
    if not access.allowed(request.user, verb, project):
        message = f"you may not {verb} runtimes in project {project!r}"
        return Verdict(False, [], message), None
    # Who may set owner references is checked here as in the API; the console's writes carry
    # the user in their field manager (nodus-console:alice).
    record = fieldmanager.recorder(
        TRAINING_RUNTIMES, fieldmanager.console_manager(request.user.get_username()), ""
    )
    admit = owner_admission.admission(request.user, TRAINING_RUNTIMES, project, record)
    try:
        if original is None:
            result = store.create(
                TRAINING_RUNTIMES, project, body, dry_run=not save, on_prepared=admit
            )
        else:
            name = original["metadata"]["name"]
            body.setdefault("metadata", {})
            body["metadata"]["resourceVersion"] = rv
            body["metadata"].setdefault("name", name)
            result = store.update(
                TRAINING_RUNTIMES, project, name, body, dry_run=not save, on_prepared=admit
            )
    except errors.ApiError as exc:
        verdict = _verdict_from_error(exc, text)
        if original is not None:
            verdict.diff = manifests.diff(original, body)
        return verdict, None
    verdict = Verdict(True, [], "", list(result.warnings))
    if original is not None:
        verdict.diff = manifests.diff(original, result.object)
    return verdict, result.object


def published(stored: Obj) -> str:
    """What a successful publish changed; the revision is the spec's generation."""
    meta = stored["metadata"]
    return f"Published {meta['name']} revision {meta.get('generation', 1)} in {meta['namespace']}."


@requires(PROJECT_FROM_FORM)
def new(request: HttpRequest) -> HttpResponse:
    projects = access.writable_projects(request.user)
    if not projects:
        return render(request, "console/publish/forbidden.html", status=403)
    preferred = [p for p in projects if p != access.MANAGED_PROJECT] or projects
    project = request.POST.get("project") or request.GET.get("project") or preferred[0]
    text = request.POST.get("manifest", manifests.STARTER)
    verdict = None
    if request.method == "POST":
        if project not in projects:
            verdict = Verdict(False, [], f"you may not publish to project {project!r}")
        else:
            verdict, stored = evaluate(request, text, project, None, "", save=True)
            if stored is not None:
                messages.success(request, published(stored))
                return redirect("runtime", project, stored["metadata"]["name"], "status")
    context = editor_context(
        request, text=text, project=project, verdict=verdict, original=None, base=""
    )
    return render(request, "console/publish/editor.html", context)


@requires(PROJECT_FROM_FORM)
@require_POST
def check(request: HttpRequest) -> HttpResponse:
    project = request.POST.get("project", "")
    text = request.POST.get("manifest", "")
    original = None
    rv = ""
    if request.POST.get("original"):
        original = load(request, project, request.POST["original"])
        # The dry run is checked against the version the editor started from, as the save
        # will be: a runtime changed meanwhile shows as a conflict while the user types.
        base = edit_base.read(request.POST.get("base", ""), project, request.POST["original"])
        rv = original["metadata"]["resourceVersion"]
        if base is not None and not edit_base.is_current(base, original):
            rv = base.resource_version
    if project not in access.writable_projects(request.user):
        verdict = Verdict(False, [], f"you may not publish to project {project!r}")
    else:
        verdict, _ = evaluate(request, text, project, original, rv, save=False)
    context = {"verdict": verdict, "original": original, "checked": True}
    return render(request, "console/publish/editor.html#feedback", context)


@requires(authorization.role("delete", TRAINING_RUNTIMES), NO_SUCH_RUNTIME)
def delete(request: HttpRequest, project: str, name: str) -> HttpResponse:
    obj = load(request, project, name)
    problem = ""
    if request.method == "POST":
        try:
            store.delete(
                TRAINING_RUNTIMES,
                project,
                name,
                resource_version=request.POST.get("resourceVersion") or None,
            )
        except errors.ApiError as exc:
            problem = exc.message
            obj = load(request, project, name)
        else:
            messages.success(request, f"Deleted runtime {name} from project {project}.")
            return redirect("catalog")
    return render(request, "console/publish/delete.html", {"obj": obj, "problem": problem})
