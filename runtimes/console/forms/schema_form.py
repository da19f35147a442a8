"""A generated form's whole round trip: prefill, read a submission, edit arrays, validate.

The baseline is what a fresh form shows (the schema's defaults under the runtime's default
parameters); `changed` is what the user moved away from it, which is all a TrainingJob needs to
carry because the runtime merges its defaults back under the job's values.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from runtimes.catalog.compile import deep_merge
from runtimes.catalog.parameters import parameter_errors
from runtimes.console.forms import edits, keys, values
from runtimes.console.forms.messages import plain
from runtimes.console.forms.nodes import Node, attach, build, mark_focus, walk
from runtimes.console.forms.values import MISSING, FormData

Schema = dict[str, Any]


@dataclass
class SchemaForm:
    tree: Node
    value: dict[str, Any]
    changed: dict[str, Any]
    problems: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)
    # The text of each input that did not read as its type (`p.lr`: "abc"): a manifest made
    # from the form keeps it, so a copied manifest says what the form shows.
    unparsed: dict[str, str] = field(default_factory=dict)

    @property
    def shape(self) -> str:
        """Which widgets are drawn: if it moves, the page must redraw the form, not just errors."""
        drawn = "|".join(f"{n.key}:{n.kind}:{n.on}:{n.chosen}" for n in walk(self.tree))
        return hashlib.sha256(drawn.encode()).hexdigest()[:16]

    @property
    def valid(self) -> bool:
        return not self.problems and not self.general

    def nodes(self) -> list[Node]:
        return list(walk(self.tree))


def baseline(schema: Schema, defaults: dict[str, Any] | None) -> dict[str, Any]:
    start = values.prefill(schema, schema)
    start = start if isinstance(start, dict) else {}
    merged = values.complete(schema, schema, deep_merge(start, defaults or {}))
    return merged if isinstance(merged, dict) else {}


def initial(schema: Schema, defaults: dict[str, Any] | None) -> SchemaForm:
    value = baseline(schema, defaults)
    return _finish(schema, value, value, {}, validate=False)


def submitted(
    schema: Schema,
    defaults: dict[str, Any] | None,
    data: FormData,
    problems: dict[str, list[str]] | None = None,
) -> SchemaForm:
    """The form a submission (or a link, with the problems found reading it) describes."""
    problems = {k: list(v) for k, v in (problems or {}).items()}
    picks: dict[str, int] = {}
    value = values.read(schema, schema, data, keys.ROOT, problems, picks=picks)
    value = value if isinstance(value, dict) else {}
    unparsed = {k: raw for k in problems if isinstance(raw := data.get(k), str) and raw}
    op = str(data.get("_op") or "")
    verb, _, target = op.partition(":")
    if verb in ("add", "remove", "up", "down") and target.startswith(keys.ROOT):
        value = edits.edit_array(value, target, verb)
        value = edits.fill_new_items(schema, schema, value)
    form = _finish(schema, value, baseline(schema, defaults), problems, True, picks)
    form.unparsed = unparsed
    if verb == "add":
        # Focus follows the user to the item they asked for.
        array = next((n for n in form.nodes() if n.key == target and n.kind == "array"), None)
        if array is not None and array.children:
            mark_focus(array.children[-1])
    return form


def _finish(
    schema: Schema,
    value: dict[str, Any],
    base: dict[str, Any],
    problems: dict[str, list[str]],
    validate: bool,
    picks: dict[str, int] | None = None,
) -> SchemaForm:
    if validate:
        unreadable = set(problems)  # said once: "Enter a number", not also "This is required"
        try:
            for error in parameter_errors(schema, value, "parameters"):
                key = keys.key_for_field(error.field)
                if key in unreadable:
                    continue
                message = plain(error) + (f" ({error.fix})" if error.fix else "")
                problems.setdefault(key, []).append(message)
        except Exception as exc:
            problems.setdefault(keys.ROOT, []).append(f"the schema could not be applied: {exc}")
    tree = build(schema, schema, value, picks=picks)
    general = attach(tree, problems)
    changed = values.changes(value, base)
    return SchemaForm(tree, value, {} if changed is MISSING else changed, problems, general)
