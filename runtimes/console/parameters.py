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

import hashlib
import json
import shlex
from typing import Any

import yaml
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from runtimes.accounts import access
from runtimes.apimachinery.meta import API_VERSION, Obj
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import compile_job
from runtimes.console.authorization import requires
from runtimes.console.forms import schema_form
from runtimes.console.forms.schema_form import SchemaForm
from runtimes.console.jobs import current_project
from runtimes.console.runtime_page import NO_SUCH_RUNTIME, load, page_context
from runtimes.console.summaries import human_duration
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.registry.trainingruntime import schema

JOB_TEXT_FIELDS = ("quantization", "data", "teacher", "environment", "accelerator")


def read_draft(data: Any, spec: Obj) -> tuple[Obj, dict[str, str]]:
    """The job fields beside the parameters: model, method, quantization, work, inputs."""
    draft: Obj = {}
    problems: dict[str, str] = {}
    for name in ("model", "method", *JOB_TEXT_FIELDS):
        value = str(data.get(f"job.{name}", "") or "").strip()
        if value:
            draft[name] = value
    work = data.get("job.work") or (
        "steps" if "Train" in (spec.get("modes") or ["Train"]) else "tasks"
    )
    amount = str(data.get("job.amount", "") or "").strip()
    if amount:
        # At most 18 digits: int() of the client's text refuses superscripts and long strings.
        if amount.isascii() and amount.isdigit() and len(amount) <= 18 and int(amount) > 0:
            draft["tasks" if work == "tasks" else "steps"] = int(amount)
        else:
            problems["amount"] = f"{amount!r} is not a positive whole number"
    return draft, problems


def job_name(runtime: str, spec: Obj) -> str:
    """``<runtime>-<6 hex of the spec>``: the same choices name the same job (apply is
    idempotent), different ones a new job; a DNS-1123 subdomain as a runtime's name is."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:6]
    return f"{runtime[:56].rstrip('-.')}-{digest}"


def job_context(request: HttpRequest, obj: Obj, form: SchemaForm, data: Any) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    meta = obj["metadata"]
    draft, draft_problems = read_draft(data, spec)
    job_spec: Obj = {
        "runtimeRef": {"name": meta["name"], "namespace": meta["namespace"]},
        **draft,
    }
    if form.changed:
        job_spec["parameters"] = form.changed
    project = current_project(request)
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": job_name(meta["name"], job_spec), "namespace": project},
        "spec": job_spec,
    }
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
    compile_errors = outcome if isinstance(outcome, list) else []
    offerings = []
    if compiled is not None:
        for plan in compiled.offerings[:8]:
            offerings.append(
                {
                    "plan": plan,
                    "duration": human_duration(plan.seconds) if plan.seconds is not None else "",
                    "cost": f"${plan.cost:,.2f}" if plan.cost is not None else "",
                    "why": [r.message for r in plan.match.reasons],
                }
            )
    presets = spec.get("presets") or []
    return {
        "form": form,
        "draft": draft,
        "draft_problems": draft_problems,
        "work": data.get("job.work")
        or ("steps" if "Train" in (spec.get("modes") or ["Train"]) else "tasks"),
        "amount": data.get("job.amount", ""),
        "models": list(dict.fromkeys(p.get("model") for p in presets)),
        "methods": schema.METHODS,
        "requires": spec.get("requires") or {},
        "model_required": bool((spec.get("requires") or {}).get("model", True)),
        "manifest": manifest_text,
        # On the button, not in a <script> element: htmx drops scripts from swapped content.
        "manifest_json": json.dumps(manifest, separators=(",", ":")),
        "project": project,
        "can_create": access.allowed(request.user, "create", project),
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
        "check_url": reverse("runtime-parameters-check", args=[meta["namespace"], meta["name"]]),
        "form_url": reverse("runtime-parameters-check", args=[meta["namespace"], meta["name"]])
        + "?render=form",
        "has_schema": bool(spec.get("parameters")),
    }


def _forms(obj: Obj) -> tuple[Obj, Obj]:
    spec = obj.get("spec") or {}
    parameters_schema = spec.get("parameters") or {"type": "object", "properties": {}}
    defaults = (spec.get("defaults") or {}).get("parameters") or {}
    return parameters_schema, defaults


def parameters_tab(request: HttpRequest, project: str, name: str) -> HttpResponse:
    obj = load(request, project, name)
    parameters_schema, defaults = _forms(obj)
    form = schema_form.initial(parameters_schema, defaults)
    context = page_context(request, obj, "parameters")
    context.update(job_context(request, obj, form, request.GET))
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
    partial = "workspace" if request.GET.get("render") == "form" else "check"
    return render(request, f"console/runtime/parameters.html#{partial}", context)
