"""The runtime page: one URL per tab (`/p/<project>/runtimes/<name>/<tab>`).

Overview, Presets, Status and YAML are here; Parameters (the generated form) lives in
`runtimes.console.parameters`, Estimates in `runtimes.console.estimates`. Every tab shares the
header partial the websocket pushes when the runtime changes, so a phase turning Ready shows up
without a reload; what the tabs and the push share (loading, the header's and the status
panel's context) is `runtime_page`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.vary import vary_on_headers

from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import REQUIREMENTS
from runtimes.catalog.matching import effective_resources, explain_gpu
from runtimes.catalog.presets import preset_resources
from runtimes.console.authorization import requires
from runtimes.console.catalog import wants_partial
from runtimes.console.compare import history_tab
from runtimes.console.drawings import topology
from runtimes.console.estimates import estimates
from runtimes.console.jobs import compiled_against
from runtimes.console.parameters import parameters_tab
from runtimes.console.runtime_page import NO_SUCH_RUNTIME, READ_RUNTIME, load, page_context, status
from runtimes.registry import authorization


@requires(authorization.signed_in("only redirects to the overview tab, which needs get"))
def runtime_default(request: HttpRequest, project: str, name: str) -> HttpResponse:
    return redirect("runtime", project, name, "overview")


@requires(READ_RUNTIME, NO_SUCH_RUNTIME)
@vary_on_headers("HX-Request")
def runtime(request: HttpRequest, project: str, name: str, tab: str) -> HttpResponse:
    if tab == "parameters":
        return parameters_tab(request, project, name)
    builders = {
        "overview": overview,
        "presets": presets,
        "estimates": estimates,
        "status": status,
        "yaml": yaml_tab,
        "history": history_tab,
    }
    if tab not in builders:
        raise Http404("no such tab")
    obj = load(request, project, name)
    context = page_context(request, obj, tab)
    context.update(builders[tab](request, obj))
    template = f"console/runtime/{tab}.html"
    if tab == "estimates" and wants_partial(request):
        template += "#result"
        context["oob"] = True
    return render(request, template, context)


def overview(request: HttpRequest, obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    defaults = spec.get("defaults") or {}
    requires = spec.get("requires") or {}
    init = defaults.get("initCommand") or {}
    return {
        "command": shlex.join(str(a) for a in spec.get("command") or []),
        "init_command": shlex.join(str(a) for a in init.get("command") or []),
        "init_timeout": init.get("timeout", ""),
        "requirements": [
            (name, bool(requires.get(name, name == "model"))) for name in REQUIREMENTS
        ],
        "topology": topology(spec),
        "sidecars": defaults.get("sidecars") or [],
        "attempt_api": spec.get("environmentTasks") == "AttemptAPI",
        "jobs_compiled": compiled_against(obj, request.user),
    }


@dataclass(frozen=True)
class OfferingView:
    accelerator: str
    count: int
    price: float
    resources: Obj


@dataclass(frozen=True)
class MatchView:
    accelerator: str
    family: str
    accelerator_class: str
    fits: bool
    reasons: tuple[str, ...]
    rejections: tuple[str, ...]
    offerings: tuple[OfferingView, ...]


def matches_for(resources: Obj) -> list[MatchView]:
    views = []
    for match in explain_gpu(resources.get("gpu"), catalog()):
        views.append(
            MatchView(
                match.variant.id,
                match.variant.family,
                match.variant.accelerator_class,
                match.fits,
                tuple(r.message for r in match.reasons),
                tuple(r.message for r in match.rejections),
                tuple(
                    OfferingView(
                        o.variant, o.count, o.price_per_hour, effective_resources(resources, o)
                    )
                    for o in match.offerings
                ),
            )
        )
    return views


def presets(request: HttpRequest, obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    rows = []
    for preset in spec.get("presets") or []:
        resources = preset_resources(spec, preset)
        matches = matches_for(resources)
        prices = [o.price for m in matches for o in m.offerings]
        rows.append(
            {
                "preset": preset,
                "resources": resources,
                "matches": matches,
                "fitting": sum(1 for m in matches if m.fits),
                "cheapest": min(prices) if prices else None,
            }
        )
    defaults = (spec.get("defaults") or {}).get("resources") or {}
    return {
        "presets": rows,
        "default_resources": defaults,
        "default_matches": matches_for(defaults),
    }


def manifest_yaml(obj: Obj) -> str:
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=100)


def yaml_tab(request: HttpRequest, obj: Obj) -> dict[str, Any]:
    # managedFields are server-side apply's bookkeeping, often half the text: hidden unless
    # asked for, as OpenShift's console does (the download keeps them).
    shown = request.GET.get("managedFields") == "show"
    managed = obj["metadata"].get("managedFields") or []
    meta = (
        obj["metadata"]
        if shown
        else {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    )
    return {
        "manifest": manifest_yaml({**obj, "metadata": meta}),
        "managed_fields_shown": shown,
        "managed_field_count": len(managed),
    }


@requires(READ_RUNTIME, NO_SUCH_RUNTIME)
def download(request: HttpRequest, project: str, name: str) -> HttpResponse:
    obj = load(request, project, name)
    response = HttpResponse(manifest_yaml(obj), content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project}-{name}.yaml"'
    return response
