"""The Estimates tab: how long a job would take and what it would cost on each offering.

Its inputs live in the query string (shareable, and the page works without script): the work
(steps or tasks, as the runtime's modes allow), the preset whose resources the job runs on,
the nodes (the preset's unless the job raises them, as a TrainingJob's ``distributed.nodes``),
and, for training, the parameters that scale a step's time, only those the runtime's schema or
defaults name. The rule itself is `catalog.estimates`; this module only reads the inputs
and words the result, with units on every number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import Obj
from runtimes.catalog import job_rules
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.estimates import SCALED_PARAMETERS, estimate
from runtimes.catalog.presets import preset_resources
from runtimes.console.drawings import bar_chart
from runtimes.console.forms.messages import plain
from runtimes.console.job_form import work_units
from runtimes.console.summaries import human_duration

# How people name the parameters that scale a step, when the runtime's schema gives no title.
SCALED_LABELS = {
    "batchSize": "Batch size",
    "gradientAccumulation": "Gradient accumulation steps",
    "maxCompletionLength": "Longest completion (tokens)",
}
UNIT_LABELS = {"steps": "training steps", "tasks": "evaluation tasks"}


@dataclass(frozen=True)
class Input:
    name: str  # the query parameter
    label: str
    value: str
    placeholder: str = ""
    help: str = ""
    error: str = ""

    @property
    def id(self) -> str:
        return f"est-{self.name}"


def _whole(raw: str | None, fallback: int | None) -> tuple[int | None, str]:
    text = (raw or "").strip()
    if not text:
        return fallback, ""
    # At most 18 digits: int() of the client's text refuses superscripts and long strings.
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        return fallback, f"Enter a whole number of 1 or more ({text[:40]!r} is not one)"
    if int(text) < 1:
        return fallback, "Enter a whole number of 1 or more"
    return int(text), ""


def _label(schema: Obj, name: str) -> str:
    node = (schema.get("properties") or {}).get(name)
    if isinstance(node, dict) and isinstance(node.get("title"), str) and node["title"]:
        return str(node["title"])
    if name in SCALED_LABELS:
        return SCALED_LABELS[name]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    return words[:1].upper() + words[1:]


def scaled_parameters(spec: Obj) -> list[str]:
    """The step-scaling parameters this runtime's task uses: its schema or defaults name them
    (a completion length means nothing to a runtime that generates no completions)."""
    schema = spec.get("parameters") or {}
    defaults = (spec.get("defaults") or {}).get("parameters") or {}
    properties = schema.get("properties") or {}
    return [n for n in SCALED_PARAMETERS if n in properties or n in defaults]


def estimates(request: HttpRequest, obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    query = request.GET
    schema = spec.get("parameters") or {}
    default_params = (spec.get("defaults") or {}).get("parameters") or {}
    units = work_units(spec)
    asked = str(query.get("work") or "")
    unit = asked if asked in units else units[0]
    amount, amount_error = _whole(query.get("amount"), 1000 if unit == "steps" else 100)
    inputs = [
        Input(
            "amount",
            f"How many {UNIT_LABELS[unit]}",
            str(amount or ""),
            error=amount_error,
        )
    ]

    presets_list = spec.get("presets") or []
    preset_index = query.get("preset", "")
    preset = None
    index = (
        int(preset_index)
        if preset_index.isascii() and preset_index.isdigit() and len(preset_index) <= 9
        else None
    )
    if index is not None and index < len(presets_list):
        preset = presets_list[index]
    resources = preset_resources(spec, preset)
    floor = int(resources.get("nodes") or 1)
    nodes_wanted, nodes_error = _whole(query.get("nodes"), None)
    errors: list[FieldError] = []
    draft = {"distributed": {"nodes": nodes_wanted}} if nodes_wanted is not None else {}
    nodes = job_rules.nodes_for(spec, draft, resources, errors)
    if errors and not nodes_error:
        nodes_error = plain(errors[0])
    resources["nodes"] = nodes
    inputs.append(
        Input(
            "nodes",
            "Nodes",
            str(nodes_wanted or ""),
            placeholder=str(floor),
            help=f"{'The preset' if preset else 'The runtime'} runs on {floor} "
            f"node{'s' if floor != 1 else ''}; a job may ask for more (a gang launcher is "
            "needed for more than 1).",
            error=nodes_error,
        )
    )

    job_parameters: Obj = {}
    scaled = scaled_parameters(spec) if unit == "steps" else []
    for name in scaled:
        default = default_params.get(name)
        value, error = _whole(query.get(name), None)
        if value is not None:
            job_parameters[name] = value
        inputs.append(
            Input(
                name,
                _label(schema, name),
                str(value or ""),
                placeholder="" if default is None else str(default),
                help="" if default is None else f"runtime default {default}",
                error=error,
            )
        )

    rows = estimate(spec, job_parameters, {unit: amount or 1}, catalog(), resources)
    chart = bar_chart(
        [
            (
                f"{r.offering.variant} · {r.offering.count} GPU",
                r.seconds,
                # The nodes are the same for every bar: the heading above the chart says them.
                f"{human_duration(r.seconds)} · ${r.cost:,.2f}",
            )
            for r in rows
        ]
    )
    measured_key = "secondsPerStep" if unit == "steps" else "secondsPerTask"
    return {
        "unit": unit,
        "units": [(u, UNIT_LABELS[u]) for u in units],
        "unit_label": UNIT_LABELS[unit],
        "amount": amount,
        "nodes": nodes,
        "inputs": inputs,
        "problems": [i for i in inputs if i.error],
        "scaled_labels": [(_label(schema, n), default_params.get(n)) for n in scaled],
        "rows": [
            {
                "row": r,
                "duration": human_duration(r.seconds),
                "node_hour": f"${r.offering.price_per_hour:,.2f}",
                "hourly": f"${r.offering.price_per_hour * r.nodes:,.2f}",
                "cost": f"${r.cost:,.2f}",
            }
            for r in rows
        ],
        "chart": chart,
        "presets_list": presets_list,
        "preset_index": preset_index,
        "measured": sorted(((spec.get("estimate") or {}).get(measured_key) or {}).items()),
    }
