"""Two runtimes, or two revisions of one, side by side; and a runtime's revision history.

`/compare?a=PROJECT/NAME[@REVISION]&b=PROJECT/NAME[@REVISION]` lays the two out section by
section: the contract (image, task, launcher, command, ...), the parameters' schema one
parameter per row, the defaults, the presets keyed by model, method and quantization, and the
estimates per accelerator class for the same amount of work. A row whose sides differ is
marked in text as well as in colour; `only=diff` keeps just those. A side without `@REVISION`
is the runtime as it is now; with it, the object as that write left it, read from the event
log, which keeps the last `NODUS_EVENT_WINDOW` revisions.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from runtimes.accounts import access
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.estimates import estimate
from runtimes.catalog.presets import preset_resources
from runtimes.console.authorization import requires
from runtimes.console.catalog import readable_runtimes
from runtimes.console.summaries import human_duration
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from runtimes.storage.compaction import window
from runtimes.storage.models import Event

# The History tab (`/p/PROJECT/runtimes/NAME/history`) lists the runtime's writes that the event
# log still holds, newest first: when, the kind of write, who (the field managers whose
# managedFields entry that write changed: the console's entries name the signed-in user, the
# controller's and kubectl's name themselves) and what (each changed field with its old and new
# value), each linked to the compare view against the runtime as it is now.
#
# Bounded: references are checked for length and shape before any lookup; flattening walks the
# stored object (already bounded by the request limits) with an explicit stack and stops at
# `MAX_DEPTH` and `MAX_ROWS`; values are shown cut to `MAX_VALUE_CHARS`; the history reads one
# page of `HISTORY_PAGE` events through the (resource, namespace, name, revision) index.

MAX_REF_CHARS = 63 + 1 + 253 + 1 + 20
MAX_DEPTH = 12
MAX_ROWS = 2_000
MAX_VALUE_CHARS = 160
MAX_CHANGES_SHOWN = 25
HISTORY_PAGE = 50
# Bookkeeping every write moves: not what anyone changed.
NOISE = ("metadata.resourceVersion", "metadata.managedFields", "metadata.generation")
# The work the estimates section prices, as the Estimates tab's default.
TRAIN_STEPS = 1_000
EVAL_TASKS = 100


class CompareError(Exception):
    """A side that cannot be shown; the message says why in plain words."""


@dataclass(frozen=True)
class Side:
    project: str
    name: str
    revision: int | None
    obj: Obj
    when: dt.datetime | None = None

    @property
    def ref(self) -> str:
        base = f"{self.project}/{self.name}"
        return base if self.revision is None else f"{base}@{self.revision}"

    @property
    def label(self) -> str:
        at = "as it is now" if self.revision is None else f"at revision {self.revision}"
        return f"{self.project}/{self.name} {at}"


@dataclass(frozen=True)
class Row:
    label: str
    a: str
    b: str

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class Section:
    title: str
    rows: tuple[Row, ...]

    @property
    def differences(self) -> int:
        return sum(1 for row in self.rows if row.differs)


def _dns_label(value: str, limit: int) -> bool:
    return (
        0 < len(value) <= limit
        and value[0].isalnum()
        and value[-1].isalnum()
        and all(c.islower() or c.isdigit() or c in "-." for c in value)
    )


def parse_ref(raw: str) -> tuple[str, str, int | None]:
    """`PROJECT/NAME` or `PROJECT/NAME@REVISION`."""
    raw = raw.strip()
    if not raw:
        raise CompareError("Choose a runtime: PROJECT/NAME, optionally @REVISION.")
    if len(raw) > MAX_REF_CHARS:
        raise CompareError("That reference is too long to name a runtime.")
    ref, at, revision = raw.partition("@")
    project, slash, name = ref.partition("/")
    if not slash or not _dns_label(project, 63) or not _dns_label(name, 253):
        raise CompareError(
            f"{raw!r} does not name a runtime: write PROJECT/NAME, e.g. nodus/sft-qwen3."
        )
    if not at:
        return project, name, None
    if not revision.isdecimal() or len(revision) > 19:
        raise CompareError(f"{revision!r} is not a revision number.")
    return project, name, int(revision)


def resolve(user: Any, raw: str) -> Side:
    project, name, revision = parse_ref(raw)
    missing = CompareError(f"There is no runtime {project}/{name} that you may read.")
    if not access.allowed(user, "get", project):
        raise missing
    if revision is None:
        try:
            return Side(project, name, None, store.get(TRAINING_RUNTIMES, project, name))
        except errors.ApiError as exc:
            raise missing from exc
    row = (
        Event.objects.filter(
            resource=TRAINING_RUNTIMES.key, namespace=project, name=name, revision=revision
        )
        .values_list("body", "created_at")
        .first()
    )
    if row is None:
        raise CompareError(
            f"Revision {revision} of {project}/{name} is not in the event log: it was not a "
            "write of this runtime, or it is older than the log keeps. Its History tab lists "
            "the revisions there are."
        )
    return Side(project, name, revision, orjson.loads(row[0]), row[1])


def short(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf paths to values (`spec.defaults.resources.cpu`, `spec.command[0]`); lists of scalars
    and anything past `MAX_DEPTH` stay whole. Iterative: the input decides no recursion."""
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any, int]] = [(prefix, value, 0)]
    while stack and len(out) < MAX_ROWS:
        path, node, depth = stack.pop()
        if isinstance(node, dict) and node and depth < MAX_DEPTH:
            for key in reversed(list(node)):
                stack.append((f"{path}.{key}" if path else str(key), node[key], depth + 1))
        elif (
            isinstance(node, list)
            and node
            and depth < MAX_DEPTH
            and any(isinstance(item, dict | list) for item in node)
        ):
            for index in reversed(range(len(node))):
                stack.append((f"{path}[{index}]", node[index], depth + 1))
        else:
            out[path] = node
    return out


def field_changes(before: Obj | None, after: Obj | None) -> list[tuple[str, str, str]]:
    """(path, old, new) for every leaf that differs, bookkeeping left out; "" for absent."""
    old, new = flatten(before or {}), flatten(after or {})
    changes = []
    for path in sorted(old.keys() | new.keys()):
        if path.startswith(NOISE) or old.get(path) == new.get(path):
            continue
        changes.append(
            (
                path,
                short(old[path]) if path in old else "",
                short(new[path]) if path in new else "",
            )
        )
    return changes


def _rows(a: dict[str, str], b: dict[str, str]) -> tuple[Row, ...]:
    keys = list(a) + [k for k in b if k not in a]
    return tuple(Row(k, a.get(k, "—"), b.get(k, "—")) for k in keys[:MAX_ROWS])


def _contract(obj: Obj) -> dict[str, str]:
    spec = dict(obj.get("spec") or {})
    for key in ("parameters", "defaults", "presets", "estimate"):
        spec.pop(key, None)
    facts = {path: short(v) for path, v in flatten(spec).items()}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    facts.update({f"label {k}": short(v) for k, v in labels.items()})
    return facts


def _schema(obj: Obj) -> dict[str, str]:
    schema = (obj.get("spec") or {}).get("parameters") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    rows = {}
    for name, prop in list(properties.items())[:MAX_ROWS]:
        if not isinstance(prop, dict):
            rows[name] = short(prop)
            continue
        parts = [str(prop.get("type") or ("reference" if "$ref" in prop else "any"))]
        if name in required:
            parts.append("required")
        for key, word in (("minimum", "≥"), ("maximum", "≤")):
            if key in prop:
                parts.append(f"{word} {short(prop[key])}")
        if "enum" in prop:
            parts.append("one of " + ", ".join(short(v) for v in prop["enum"][:20]))
        if "default" in prop:
            parts.append(f"default {short(prop['default'])}")
        rows[name] = short(" · ".join(parts))
    return rows


def _defaults(obj: Obj) -> dict[str, str]:
    defaults = (obj.get("spec") or {}).get("defaults") or {}
    return {path: short(v) for path, v in flatten(defaults).items()}


def _resources(resources: Obj) -> str:
    gpu = resources.get("gpu") or {}
    parts = [
        f"{resources['cpu']} CPU" if "cpu" in resources else "",
        f"{resources['memory']} memory" if "memory" in resources else "",
    ]
    if gpu:
        kinds = gpu.get("type") or ["any GPU"]
        kinds = kinds if isinstance(kinds, list) else [kinds]
        text = f"{gpu.get('count', 1)} x {' | '.join(str(k) for k in kinds)}"
        if gpu.get("minMemory"):
            text += f" ≥ {gpu['minMemory']}"
        parts.append(text)
    return " · ".join(p for p in parts if p) or "no resources"


def _presets(obj: Obj) -> dict[str, str]:
    spec = obj.get("spec") or {}
    rows = {}
    for preset in (spec.get("presets") or [])[:MAX_ROWS]:
        key = " · ".join(
            str(preset[k]) for k in ("model", "method", "quantization") if preset.get(k)
        )
        rows[key] = _resources(preset_resources(spec, preset))
    return rows


def work_for(a: Obj, b: Obj) -> dict[str, int]:
    """The same work for both sides: steps when both train, else tasks."""
    trains = all("Train" in ((o.get("spec") or {}).get("modes") or ["Train"]) for o in (a, b))
    return {"steps": TRAIN_STEPS} if trains else {"tasks": EVAL_TASKS}


def _estimates(obj: Obj, work: dict[str, int]) -> dict[str, str]:
    fastest: dict[str, str] = {}
    try:
        rows = estimate(obj.get("spec") or {}, None, work, catalog())
    except (ValueError, TypeError, KeyError):
        return {}
    for row in rows:  # fastest first: the first row of a class is its best
        if row.accelerator_class not in fastest:
            nodes = f"{row.nodes} node{'s' if row.nodes != 1 else ''}"
            fastest[row.accelerator_class] = (
                f"{human_duration(row.seconds)} · ${row.cost:,.2f} for the run "
                f"({nodes} of {row.offering.count} x {row.offering.variant})"
            )
    return fastest


def sections(a: Side, b: Side) -> list[Section]:
    work = work_for(a.obj, b.obj)
    unit, amount = next(iter(work.items()))
    return [
        Section("Contract", _rows(_contract(a.obj), _contract(b.obj))),
        Section("Parameters", _rows(_schema(a.obj), _schema(b.obj))),
        Section("Defaults", _rows(_defaults(a.obj), _defaults(b.obj))),
        Section("Presets", _rows(_presets(a.obj), _presets(b.obj))),
        Section(
            f"Estimates for {amount:,} {unit}, fastest offering per accelerator class",
            _rows(_estimates(a.obj, work), _estimates(b.obj, work)),
        ),
    ]


# As the catalog: everyone signed in lists the runtimes they may read; each side is then shown
# only if the caller may get it (`resolve`).
@requires(authorization.role("list", TRAINING_RUNTIMES))
def compare(request: HttpRequest) -> HttpResponse:
    raw_a, raw_b = request.GET.get("a", ""), request.GET.get("b", "")
    only_diff = request.GET.get("only") == "diff"
    problems: dict[str, str] = {}
    sides: dict[str, Side] = {}
    for key, raw in (("a", raw_a), ("b", raw_b)):
        if not raw:
            continue  # not chosen yet (the first visit, or from a runtime's page): a picker
        try:
            sides[key] = resolve(request.user, raw)
        except CompareError as exc:
            problems[key] = str(exc)
    shown: list[Section] = []
    if "a" in sides and "b" in sides:
        shown = sections(sides["a"], sides["b"])
        if only_diff:
            shown = [Section(s.title, tuple(r for r in s.rows if r.differs)) for s in shown]
    objects, _revision = readable_runtimes(request.user)
    visible = sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects)
    swap = urlencode({"a": raw_b, "b": raw_a} | ({"only": "diff"} if only_diff else {}))
    return render(
        request,
        "console/compare.html",
        {
            "a": sides.get("a"),
            "b": sides.get("b"),
            "raw_a": raw_a,
            "raw_b": raw_b,
            "problems": problems,
            "sections": shown,
            "only_diff": only_diff,
            "choices": visible,
            "swap": swap,
        },
        status=400 if problems else 200,
    )


@dataclass(frozen=True)
class Revision:
    revision: int
    type: str
    when: dt.datetime
    who: tuple[str, ...]  # the field managers that wrote
    actor: str  # the user who made the write ("" when unknown: a command, older revisions)
    changes: tuple[tuple[str, str, str], ...]
    more: int


def _managers(before: Obj | None, after: Obj | None) -> tuple[str, ...]:
    """The managers that made this write: their managedFields entry is new, has a new time, or
    owns fields it did not (an entry that only lost fields to another manager did not write)."""

    def entries(obj: Obj | None) -> dict[tuple[str, str, str], tuple[Any, set[str]]]:
        fields = ((obj or {}).get("metadata") or {}).get("managedFields") or []
        found = {}
        for entry in fields:
            if isinstance(entry, dict):
                key = (
                    str(entry.get("manager", "")),
                    str(entry.get("operation", "")),
                    str(entry.get("subresource", "")),
                )
                found[key] = (entry.get("time"), set(flatten(entry.get("fieldsV1") or {})))
        return found

    old, new = entries(before), entries(after)
    writers = set()
    for key, (time, owned) in new.items():
        prior = old.get(key)
        if prior is None or prior[0] != time or not owned <= prior[1]:
            writers.add(key[0])
    return tuple(sorted(m for m in writers if m))


def history(project: str, name: str, before: int | None) -> tuple[list[Revision], int | None]:
    """One page of the runtime's writes still in the event log, newest first, and the revision
    to ask `before` for the next page (None at the end)."""
    rows = Event.objects.filter(resource=TRAINING_RUNTIMES.key, namespace=project, name=name)
    if before is not None:
        rows = rows.filter(revision__lt=before)
    page = list(
        rows.order_by("-revision").values_list(
            "revision", "type", "created_at", "body", "prev_body", "actor"
        )[: HISTORY_PAGE + 1]
    )
    revisions = []
    for revision, type_, when, body, prev, by in page[:HISTORY_PAGE]:
        after = orjson.loads(body)
        prior = orjson.loads(prev) if prev else None
        if type_ == "DELETED":
            changes: list[tuple[str, str, str]] = []
        else:
            changes = field_changes(prior, after)
        revisions.append(
            Revision(
                revision,
                type_,
                when,
                _managers(prior, after),
                by,
                tuple(changes[:MAX_CHANGES_SHOWN]),
                max(0, len(changes) - MAX_CHANGES_SHOWN),
            )
        )
    following = page[HISTORY_PAGE - 1][0] if len(page) > HISTORY_PAGE else None
    return revisions, following


def history_tab(request: HttpRequest, obj: Obj) -> dict[str, Any]:
    meta = obj["metadata"]
    raw = request.GET.get("before", "")
    before = int(raw) if raw.isdecimal() and len(raw) <= 19 else None
    revisions, following = history(meta["namespace"], meta["name"], before)
    return {
        "revisions": revisions,
        "following": following,
        "paged": before is not None,
        "window": f"{window():,}",
        # The revision the runtime is at now: comparing it "with now" would compare it with itself.
        "current": int(meta.get("resourceVersion") or 0),
    }
