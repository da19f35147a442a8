"""The Parameters tab: a job draft form generated from the runtime's JSON Schema.

The tab draws the form prefilled with defaults; as the user types, htmx posts it to `check`,
which validates on the server (jsonschema is the authority) and answers with out-of-band swaps:
each field's error line and the output panel (the TrainingJob manifest with only what changed,
in the user's current project and named after its content, so applying it twice is one job;
the same as a ``kubectl apply`` command and a curl of the compile subresource; the compile
result). Editors of that project also get a "Create job" button, which POSTs the manifest to
the API from the page (``static/console/live.js``). Structural edits (array items, union
variants, optional objects) post with ``render=form`` and get the whole form redrawn.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import shlex
from typing import Any

import yaml
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from runtimes.apimachinery import errors as api_errors
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import API_VERSION, Obj
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import compile_job
from runtimes.console.authorization import requires
from runtimes.console.forms import keys, schema_form, summary, url_state
from runtimes.console.forms.schema_form import SchemaForm
from runtimes.console.job_form import (
    CONTROL_OF,
    LABELS,
    NUMBER_FIELDS,
    TEXT_FIELDS,
    choice_key,
    job_fields,
    place_errors,
    read_draft,
    unparsed_inputs,
)
from runtimes.console.offerings import ORDERS, accelerator_groups, offering_rows, order_of
from runtimes.console.projects import job_project, job_projects
from runtimes.console.runtime_page import NO_SUCH_RUNTIME, load, page_context
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES
from runtimes.storage import store


def job_name(runtime: str, spec: Obj) -> str:
    """``<runtime>-<6 hex of the spec>``: the same choices name the same job (apply is
    idempotent), different ones a new job; a DNS-1123 subdomain as a runtime's name is."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:6]
    return f"{runtime[:56].rstrip('-.')}-{digest}"


def job_context(
    request: HttpRequest,
    obj: Obj,
    form: SchemaForm,
    data: Any,
    restored: url_state.Restored | None = None,
) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    meta = obj["metadata"]
    restored = restored or url_state.Restored()
    draft, draft_problems = read_draft(data, spec)
    parsed: Obj = {"runtimeRef": {"name": meta["name"], "namespace": meta["namespace"]}, **draft}
    if form.changed:
        parsed["parameters"] = form.changed
    # The manifest shown keeps text that did not read, as typed (and is then not valid); the
    # API is asked about the rest, so its answer covers every field the form could read.
    job_spec: Obj = {**parsed, **unparsed_inputs(data, spec)}
    if form.unparsed:
        job_spec["parameters"] = with_unparsed(form)
    choices = job_projects(request.user)
    chosen = job_project(request, str(data.get("job.project") or ""))
    project = chosen or meta["namespace"]
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": job_name(meta["name"], job_spec), "namespace": project},
        "spec": job_spec,
    }
    # Create job asks the server for a fresh name each time (generateName): pressing it twice
    # makes two jobs, never a 409. The manifest shown keeps a name, for `kubectl apply`.
    created = {**manifest, "metadata": {"generateName": f"{meta['name']}-", "namespace": project}}
    manifest_text = yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True)
    compile_body = {**draft, "parameters": form.changed}
    compile_path = (
        f"/apis/{API_VERSION}/namespaces/{meta['namespace']}/trainingruntimes/"
        f"{meta['name']}/compile"
    )
    server = request.build_absolute_uri("/").rstrip("/")
    body_json = json.dumps(compile_body, separators=(",", ":"))
    outcome = compile_job(obj, {**compile_body, "parameters": form.changed}, catalog())
    compiled = None if isinstance(outcome, list) else outcome
    # One verdict: the errors are the API's own answer to creating this job (a dry run), beside
    # the form's parse errors; each said once, on its field.
    compile_errors = dry_run_causes(project, {**created, "spec": parsed})
    fields = job_fields(spec, data, draft, catalog())
    for key, messages in restored.problems.items():
        if key.startswith("job."):
            draft_problems.setdefault(key.removeprefix("job."), "; ".join(messages))
    # Inputs left empty are "still needed", not errors, until the user asks for a check: a
    # fresh form does not open covered in red.
    submitted = restored.submitted or "_submit" in data
    missing = [] if submitted else [e for e in compile_errors if e.reason == "FieldValueRequired"]
    unplaced = place_errors(fields, [e for e in compile_errors if e not in missing], draft_problems)
    order = order_of(data)
    offerings = offering_rows(obj, compile_body, compiled, catalog(), order)
    for f in fields:
        if f.name == "accelerator" and f.choices is not None:
            offered = [c.value for c in f.choices if c.value]
            f.groups = accelerator_groups(offered, f.value, catalog())
    errors = summary.problems(form, fields, unplaced, restored.general)
    return {
        # Create job is offered only for a manifest the API would take.
        "ready": not errors and not missing,
        "form": form,
        "draft": draft,
        "job_fields": fields,
        "errors": errors,
        "submitted": submitted,
        "missing": still_needed(missing),
        # The choices the model and method narrow (methods, quantization schemes): when they
        # move, a check redraws those two fields.
        "choices": choice_key(spec, draft),
        "focus_summary": restored.submitted and bool(errors),
        "tab_url": reverse("runtime", args=[meta["namespace"], meta["name"], "parameters"]),
        "max_query": url_state.MAX_QUERY,
        "manifest": manifest_text,
        # On the button, not in a <script> element: htmx drops scripts from swapped content.
        "manifest_json": json.dumps(created, separators=(",", ":")),
        "project": project,
        "job_projects": choices,
        "can_create": chosen is not None,
        "create_url": f"/apis/{API_VERSION}/namespaces/{project}/trainingjobs",
        "kubectl": f"kubectl apply -f - <<'EOF'\n{manifest_text}EOF",
        "curl": (
            f"curl -sS -X POST {shlex.quote(server + compile_path)} \\\n"
            '  -H "Authorization: Bearer $NODUS_TOKEN" -H "Content-Type: application/json" \\\n'
            f"  -d {shlex.quote(body_json)}"
        ),
        "compiled": compiled,
        "compile_errors": compile_errors,
        "offerings": offerings,
        "offer_order": order,
        "offer_orders": ORDERS,
        "cheapest": next((o for o in offerings if o.cheapest), None),
        "fastest": next((o for o in offerings if o.fastest), None),
        "check_url": reverse("runtime-parameters-check", args=[meta["namespace"], meta["name"]]),
        "form_url": reverse("runtime-parameters-check", args=[meta["namespace"], meta["name"]])
        + "?render=form",
        "has_schema": bool(spec.get("parameters")),
    }


def with_unparsed(form: SchemaForm) -> Obj:
    """The parameters the form changed, with the text of each input that did not read put back
    where it was typed (the API then says why it is not a value)."""
    parameters = copy.deepcopy(form.changed)
    for key, raw in form.unparsed.items():
        *parents, last = keys.path_of(key)
        place: Any = parameters
        for segment in parents:
            if not isinstance(place, dict):
                break
            place = place.setdefault(segment, {})
        else:
            if isinstance(place, dict) and last:
                place[last] = raw
    return parameters


def dry_run_causes(project: str, manifest: Obj) -> list[FieldError]:
    """The causes the API answers a dry run of creating `manifest` in `project` with, named
    below the job's spec as the form's fields are (`model`, `parameters.learningRate`)."""
    try:
        store.create(TRAINING_JOBS, project, manifest, dry_run=True)
    except api_errors.ApiError as refusal:
        if not refusal.causes:
            return [FieldError("", refusal.reason, refusal.message, refusal.fix or "")]
        return [
            dataclasses.replace(cause, field=cause.field.removeprefix("spec."))
            for cause in refusal.causes
        ]
    return []


def still_needed(missing: list[FieldError]) -> list[str]:
    """The labels of the inputs left empty, in the form's order."""
    order = list(LABELS)
    controls = [CONTROL_OF.get(e.field, "") for e in missing]
    ranked = sorted(
        zip(controls, missing, strict=True),
        key=lambda c: order.index(c[0]) if c[0] in order else len(order),
    )
    return list(dict.fromkeys(LABELS.get(c, e.field) for c, e in ranked))


def _forms(obj: Obj) -> tuple[Obj, Obj]:
    spec = obj.get("spec") or {}
    parameters_schema = spec.get("parameters") or {"type": "object", "properties": {}}
    defaults = (spec.get("defaults") or {}).get("parameters") or {}
    return parameters_schema, defaults


def parameters_tab(request: HttpRequest, project: str, name: str) -> HttpResponse:
    obj = load(request, project, name)
    parameters_schema, defaults = _forms(obj)
    # The form's state, from the address (`url_state`): a shared link or a reload draws the
    # form as it was left, with its errors, even without script.
    restored = url_state.restore(request.META.get("QUERY_STRING", ""))
    data: Any = restored.data if restored.data is not None else QueryDict()
    if restored.data is None:
        form = schema_form.initial(parameters_schema, defaults)
    else:
        seeded = {k: v for k, v in restored.problems.items() if not k.startswith("job.")}
        form = schema_form.submitted(parameters_schema, defaults, data, seeded)
        drawn = {node.key for node in form.nodes()}
        names = {f"job.{n}" for n in (*TEXT_FIELDS, *NUMBER_FIELDS, "work", "project")}
        if unknown := url_state.unknown_fields(data, drawn, names):
            restored.general.append(unknown)
    context = page_context(request, obj, "parameters")
    context.update(job_context(request, obj, form, data, restored))
    return render(request, "console/runtime/parameters.html", context)


# Only POST is served (require_POST answers 405 to the rest, whoever asks).
@requires(authorization.role({"POST": "get"}, TRAINING_RUNTIMES), NO_SUCH_RUNTIME)
@require_POST
def check(request: HttpRequest, project: str, name: str) -> HttpResponse:
    obj = load(request, project, name)
    parameters_schema, defaults = _forms(obj)
    form = schema_form.submitted(parameters_schema, defaults, request.POST)
    context = page_context(request, obj, "parameters")
    context.update(job_context(request, obj, form, request.POST))
    redraw = request.GET.get("render") == "form" or request.POST.get("_shape") != form.shape
    context["redraw_oob"] = redraw and request.GET.get("render") != "form"
    context["choices_oob"] = not redraw and request.POST.get("_choices") != context["choices"]
    partial = "workspace" if request.GET.get("render") == "form" else "check"
    return render(request, f"console/runtime/parameters.html#{partial}", context)
