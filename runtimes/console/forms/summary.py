"""The error summary of a form: every problem once, each with a link to the control it is about.

Problems come from three places: the generated parameter fields (`SchemaForm`), the Job part
(`job_form`), and the compile, whose errors on parameters repeat the form's own unless they
come from the merge with the runtime's defaults. Each entry names the field as the form labels
it and links to the element its message sits in, so a keyboard user can go straight there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.console.forms import keys
from runtimes.console.forms.messages import plain
from runtimes.console.forms.nodes import Node, attach
from runtimes.console.forms.schema_form import SchemaForm


@dataclass(frozen=True)
class Problem:
    label: str
    message: str
    target: str = ""  # the id of the control (or group) it is about; "" when none is drawn
    fix: str = ""


def _path_label(node: Node, ancestors: dict[str, Node]) -> str:
    """``Optimizer / Beta 1``: the labels from below the form's root down to the node's."""
    labels = [node.label]
    key, item = keys.parent(node.key), node.in_array
    while key is not None and keys.parent(key) is not None and key in ancestors:
        ancestor = ancestors[key]
        if not (item and ancestor.kind == "array"):  # an item's label names its list
            labels.insert(0, ancestor.label)
        key, item = keys.parent(key), ancestor.in_array
    return " / ".join(labels)


def problems(
    form: SchemaForm,
    job_fields: list[Any],
    compile_errors: list[FieldError],
    general: list[str],
) -> list[Problem]:
    found: list[Problem] = [Problem("This link", m) for m in general]
    for job_field in job_fields:
        for message in job_field.errors:
            found.append(Problem(job_field.label, message, job_field.id, " ".join(job_field.fixes)))
    by_key: dict[str, Node] = {}
    for node in form.nodes():
        by_key.setdefault(node.key, node)  # a union before its branch: "Optimizer", not "AdamW"
    extra: dict[str, list[str]] = {}
    for error in compile_errors:
        if error.field.startswith("parameters"):
            if form.problems:
                continue  # the form's own validation said it, at the field
            extra.setdefault(keys.key_for_field(error.field), []).append(plain(error))
        else:
            found.append(Problem(error.field, plain(error), "", error.fix))
    if extra:
        # Errors of the merged parameters (the runtime's defaults under the job's): drawn on
        # the nearest field like the form's own.
        form.general.extend(attach(form.tree, extra))
    for node in form.nodes():
        if node.kind == "union" and node.children:
            continue  # its branch, drawn under the same key, carries the messages
        for message in node.errors:
            found.append(Problem(_path_label(node, by_key), message, node.id))
    found += [Problem("Parameters", m) for m in form.general]
    return list(dict.fromkeys(found))
