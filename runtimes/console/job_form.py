"""The Job part of the Parameters form: a TrainingJob's own inputs beside its parameters.

One control per input a TrainingJob takes from a person: model, method and quantization (chosen
from the runtime's presets), the work (steps or tasks, as the runtime's modes allow), accelerator
(the catalog's variants and families that match the runtime), nodes (for gang launchers), and
the data, teacher and environment inputs, whether the runtime requires them or not. Help texts
come from the TrainingJob schema; errors are the compile's, in plain words
(`forms.messages`), each on the control of the field it names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import AcceleratorCatalog
from runtimes.catalog.compile import chosen_preset
from runtimes.catalog.job_rules import ATTEMPT_API, GANG_LAUNCHERS
from runtimes.catalog.matching import match_gpu
from runtimes.catalog.presets import preset_resources
from runtimes.console.forms.messages import plain
from runtimes.registry.trainingjob import schema as job_schema
from runtimes.registry.trainingruntime.schema import METHODS

TEXT_FIELDS = ("model", "method", "quantization", "accelerator", "data", "teacher", "environment")
NUMBER_FIELDS = ("amount", "nodes")
# Where a compile error's field (a path into the draft) is shown in this form.
CONTROL_OF = {
    **{name: name for name in TEXT_FIELDS},
    "steps": "amount",
    "tasks": "amount",
    "mode": "amount",
    "distributed.nodes": "nodes",
    "resources.nodes": "nodes",
}
LABELS = {
    "model": "Model",
    "method": "Method",
    "quantization": "Quantization",
    "amount": "Work",
    "accelerator": "Accelerator",
    "nodes": "Nodes",
    "data": "Training data",
    "teacher": "Teacher model",
    "environment": "Environment",
}


@dataclass
class Choice:
    value: str
    label: str
    selected: bool


@dataclass
class JobField:
    name: str
    label: str
    value: str = ""
    choices: list[Choice] | None = None  # a select when set
    required: bool = False
    disabled: bool = False
    help: str = ""
    placeholder: str = ""
    numeric: bool = False
    unit: JobField | None = None  # the work's steps-or-tasks select beside its amount
    narrowed: bool = False  # its choices follow the model, method and quantization
    groups: list[Any] | None = None  # a select's optgroups (label, choices), when it has them
    errors: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"job-{self.name}"

    @property
    def key(self) -> str:
        return f"job.{self.name}"


def work_units(spec: Obj) -> list[str]:
    modes = spec.get("modes") or ["Train"]
    return [unit for mode, unit in (("Train", "steps"), ("Evaluate", "tasks")) if mode in modes]


def _text(data: Any, name: str) -> str:
    return str(data.get(f"job.{name}", "") or "").strip()


def _whole(text: str) -> int | None:
    # At most 18 digits: int() of the client's text refuses superscripts and long strings.
    if text.isascii() and text.isdigit() and len(text) <= 18 and int(text) > 0:
        return int(text)
    return None


def read_draft(data: Any, spec: Obj) -> tuple[Obj, dict[str, str]]:
    """The job fields beside the parameters, and the problems of text that is not a number."""
    draft: Obj = {}
    problems: dict[str, str] = {}
    for name in TEXT_FIELDS:
        if _text(data, name):
            draft[name] = _text(data, name)
    if draft.get("model") and draft.get("method"):
        # Where the presets measured one scheme for this model and method (QLoRA's nf4, or none
        # for LoRA), it is the choice: also over a scheme left from an earlier method. A scheme
        # no preset knows stays, and its error says so.
        offered = schemes(spec, draft["model"], draft["method"])
        known = {str(p.get("quantization") or "") for p in spec.get("presets") or []}
        if len(offered) == 1 and draft.get("quantization", "") in known:
            draft.pop("quantization", None)
            if offered[0]:
                draft["quantization"] = offered[0]
    units = work_units(spec)
    work = _text(data, "work")
    if work and work not in units:
        problems["amount"] = f"Count the work in {' or '.join(units)} ({work[:40]!r} is not one)"
    work = work if work in units else units[0]
    for name in NUMBER_FIELDS:
        text = _text(data, name)
        if not text:
            continue
        number = _whole(text)
        if number is None:
            problems.setdefault(name, "Enter a whole number of 1 or more")
        elif name == "amount":
            draft[work] = number
        else:
            draft["distributed"] = {"nodes": number}
    return draft, problems


def unparsed_inputs(data: Any, spec: Obj) -> Obj:
    """The Job inputs whose text did not read as a number, where the spec would carry them
    (`{"steps": "ten"}`), so a manifest made from the form keeps what the form shows."""
    found: Obj = {}
    units = work_units(spec)
    work = _text(data, "work")
    amount, nodes = _text(data, "amount"), _text(data, "nodes")
    if amount and _whole(amount) is None:
        found[work if work in units else units[0]] = amount
    if nodes and _whole(nodes) is None:
        found["distributed"] = {"nodes": nodes}
    return found


def choice_key(spec: Obj, draft: Obj) -> str:
    """What the offered choices depend on (the model, method and quantization, with presets),
    as a short digest: when it moves, the fields with narrowed choices are redrawn."""
    if not spec.get("presets"):
        return "-"
    chosen = json.dumps([draft.get("model"), draft.get("method"), draft.get("quantization")])
    return hashlib.sha256(chosen.encode()).hexdigest()[:12]


def _help(name: str, description: str = "") -> str:
    """The TrainingJob schema's description, without its Go-doc opening ("Data is …")."""
    description = description or job_schema.SPEC.properties[name].description
    opening = f"{name[:1].upper()}{name[1:]} is "
    if description.startswith(opening):
        rest = description.removeprefix(opening)
        return rest[:1].upper() + rest[1:]
    return description


def _choices(values: list[str], current: str, empty: str) -> list[Choice]:
    # A value the link or the user brought that is not offered stays, so it round-trips and its
    # error can say why.
    values = list(dict.fromkeys([*values, *([current] if current else [])]))
    return [Choice("", empty, not current)] + [Choice(v, v, v == current) for v in values if v]


def schemes(spec: Obj, model: str, method: str) -> list[str]:
    """The quantization schemes of the presets for this model (and method, when chosen)."""
    presets = [p for p in spec.get("presets") or [] if p.get("model") == model]
    if method:
        presets = [p for p in presets if p.get("method") == method]
    return list(dict.fromkeys(str(p.get("quantization") or "") for p in presets))


def _scheme_choices(offered: list[str], current: str) -> list[Choice]:
    values = list(dict.fromkeys([*offered, current]))
    # An empty scheme is a choice ("none") only where a preset has none; else it means
    # "not chosen yet", so the select never shows a scheme the form would not send.
    choices = [
        Choice(v, v or "none (full precision)", v == current) for v in values if v or "" in offered
    ]
    if not current and "" not in offered:
        choices.insert(0, Choice("", "choose a scheme", True))
    return choices


def accelerators(
    spec: Obj, catalog: AcceleratorCatalog, preset: Mapping[str, Any] | None = None
) -> list[str]:
    """Families, then variant ids, that match the chosen preset, else the runtime's defaults or
    any of its presets."""
    if preset is not None:
        requests = [preset_resources(spec, preset)]
    else:
        requests = [preset_resources(spec, None)]
        requests += [preset_resources(spec, p) for p in spec.get("presets") or []]
    variants = [m.variant for r in requests for m in match_gpu(r.get("gpu"), catalog)]
    families = dict.fromkeys(v.family for v in variants)
    return [*families, *dict.fromkeys(v.id for v in variants)]


def job_fields(spec: Obj, data: Any, draft: Obj, catalog: AcceleratorCatalog) -> list[JobField]:
    presets = spec.get("presets") or []
    requires = spec.get("requires") or {}
    values = {name: _text(data, name) for name in (*TEXT_FIELDS, *NUMBER_FIELDS)}
    model, method = values["model"], values["method"]
    fields: list[JobField] = []

    models = [str(p.get("model")) for p in presets]
    fields.append(
        JobField(
            "model",
            LABELS["model"],
            model,
            _choices(models, model, "choose a model") if presets else None,
            required=bool(requires.get("model", True)),
            help=_help("model"),
            placeholder="owner/name",
        )
    )
    for_model = [p for p in presets if p.get("model") == model] or presets
    methods = [str(p.get("method")) for p in for_model] if presets else list(METHODS)
    fields.append(
        JobField(
            "method",
            LABELS["method"],
            method,
            _choices(methods, method, "choose a method"),
            help=_help("method"),
            narrowed=True,
        )
    )
    quantization = str(draft.get("quantization") or "")
    offered = schemes(spec, model, method) if model else []
    if not offered:
        offered = list(dict.fromkeys(str(p.get("quantization") or "") for p in presets)) or [""]
    fields.append(
        JobField(
            "quantization",
            LABELS["quantization"],
            quantization,
            _scheme_choices(offered, quantization),
            help="The presets' schemes for the chosen model and method; QLoRA needs one.",
            narrowed=True,
        )
    )
    units = work_units(spec)
    work = _text(data, "work")
    work = work if work in units else units[0]
    unit_labels = {"steps": "training steps", "tasks": "evaluation tasks"}
    fields.append(
        JobField(
            "amount",
            LABELS["amount"],
            values["amount"],
            numeric=True,
            help=_help(work),
            unit=JobField(
                "work",
                "Unit",
                work,
                [Choice(u, unit_labels[u], u == work) for u in units],
            ),
        )
    )
    from_catalog = accelerators(spec, catalog, chosen_preset(spec, draft))
    fields.append(
        JobField(
            "accelerator",
            LABELS["accelerator"],
            values["accelerator"],
            _choices(from_catalog, values["accelerator"], "any that fits"),
            help=_help("accelerator"),
            narrowed=True,
        )
    )
    preset_nodes = [int((p.get("resources") or {}).get("nodes") or 1) for p in presets]
    if (spec.get("launcher") or "Plain") in GANG_LAUNCHERS or max(preset_nodes, default=1) > 1:
        fields.append(
            JobField(
                "nodes",
                LABELS["nodes"],
                values["nodes"],
                numeric=True,
                placeholder="the preset's",
                help=_help("nodes", job_schema.DISTRIBUTED.properties["nodes"].description),
            )
        )
    for name, example in (
        ("data", "hf://datasets/owner/name"),
        ("teacher", "owner/name"),
        ("environment", ""),
    ):
        disabled = (
            name == "environment"
            and spec.get("environmentTasks") != ATTEMPT_API
            and not values[name]
        )
        fields.append(
            JobField(
                name,
                LABELS[name],
                values[name],
                required=bool(requires.get(name, False)),
                disabled=disabled,
                help=(
                    "This runtime's image cannot run environment tasks."
                    if disabled
                    else _help(name)
                ),
                placeholder=example,
            )
        )
    return fields


def place_errors(
    fields: list[JobField], errors: list[FieldError], problems: dict[str, str]
) -> list[FieldError]:
    """Puts each error on its control; returns those no control of this part shows."""
    by_name = {f.name: f for f in fields}
    for name, message in problems.items():
        if name in by_name:
            by_name[name].errors.append(message)
    rest = []
    for error in errors:
        target = by_name.get(CONTROL_OF.get(error.field, ""))
        if target is None:
            rest.append(error)
            continue
        if target.name in problems:
            continue  # its text did not read: that is the one thing to say about it
        message = plain(error)
        if message not in target.errors:
            target.errors.append(message)
        if error.fix and error.fix not in target.fixes:
            target.fixes.append(error.fix)
    return rest
