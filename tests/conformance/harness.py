"""The conformance harness: request sequences as data, run in-process or against a live server.

A `Sequence` is what a real kube-apiserver 1.35 does for a CRD-backed resource, written down
from kube's own sources (its `source` names the file and test). Each `Step` sends one request
and states what kube answers: the status code, the response body (a pattern: see `matches`),
response headers, and values to remember for later steps (`save`). A `Watch` step opens a
watch (live server only) and `Events` reads the next events from it.

Patterns: a dict matches a dict holding at least its keys (`ABSENT` says a key must not be
there), a list matches a list of the same length item by item, a `Matcher` decides for itself,
anything else must be equal. Strings in paths, bodies and patterns may name saved values as
`{name}`; a string that is only `{name}` becomes the saved value itself.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

GV = "/apis/nodus.dev/v1beta1"
TRS = f"{GV}/namespaces/demo/trainingruntimes"
ACCS = f"{GV}/accelerators"
IMAGE = "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


# ---- patterns ---------------------------------------------------------------------------------


class Matcher:
    """A pattern that decides by itself; `check` says what is wrong, or None."""

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        raise NotImplementedError


class _Absent(Matcher):
    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        return None  # handled by the dict walk: reaching here means the key is absent

    def __repr__(self) -> str:
        return "ABSENT"


class _Any(Matcher):
    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        return None

    def __repr__(self) -> str:
        return "ANY"


ABSENT: Any = _Absent()
ANY: Any = _Any()


@dataclass(frozen=True)
class Re(Matcher):
    """A string matching the regular expression (fully)."""

    pattern: str

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        pattern = _NAME.sub(
            lambda m: re.escape(str(saved[m.group(1)])) if m.group(1) in saved else m.group(0),
            self.pattern,
        )
        if isinstance(actual, str) and re.fullmatch(pattern, actual):
            return None
        return f"{actual!r} does not match /{pattern}/"


@dataclass(frozen=True)
class Contains(Matcher):
    """A string holding each of the substrings, or a list holding each of the items' patterns."""

    parts: tuple[Any, ...]

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        for part in self.parts:
            part = substitute(part, saved)
            if isinstance(actual, str):
                if part not in actual:
                    return f"{actual!r} does not contain {part!r}"
            elif isinstance(actual, list):
                if not any(matches(item, part, saved) is None for item in actual):
                    return f"no item of {actual!r} matches {part!r}"
            else:
                return f"{actual!r} is neither a string nor a list"
        return None


def contains(*parts: Any) -> Any:
    return Contains(parts)


@dataclass(frozen=True)
class Exactly(Matcher):
    """Equal as a whole (a dict with no other keys)."""

    value: Any

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        expected = substitute(self.value, saved)
        return None if actual == expected else f"{actual!r} != {expected!r}"


@dataclass(frozen=True)
class Compare(Matcher):
    """An integer (or integer string) compared with a saved one: `later("rv")`, `same("rv")`."""

    name: str
    relation: str  # ">", "==", "!="

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        try:
            a, b = int(actual), int(saved[self.name])
        except (TypeError, ValueError, KeyError):
            return f"{actual!r} cannot be compared with {self.name}={saved.get(self.name)!r}"
        ok = {">": a > b, "==": a == b, "!=": a != b}[self.relation]
        return None if ok else f"{actual!r} is not {self.relation} {self.name}={b}"


def later(name: str) -> Any:
    return Compare(name, ">")


def same(name: str) -> Any:
    return Compare(name, "==")


def other(name: str) -> Any:
    return Compare(name, "!=")


@dataclass(frozen=True)
class AllOf(Matcher):
    """Every one of the patterns."""

    patterns: tuple[Any, ...]

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        for pattern in self.patterns:
            problem = matches(actual, pattern, saved)
            if problem:
                return problem
        return None


def all_of(*patterns: Any) -> Any:
    return AllOf(patterns)


@dataclass(frozen=True)
class Item(Matcher):
    """A list whose item at `index` matches `pattern` (other items are not checked)."""

    index: int
    pattern: Any

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        if not isinstance(actual, list) or len(actual) <= self.index:
            return f"{actual!r} has no item {self.index}"
        return matches(actual[self.index], self.pattern, saved, f"[{self.index}]")


@dataclass(frozen=True)
class Length(Matcher):
    count: int

    def check(self, actual: Any, saved: Mapping[str, Any]) -> str | None:
        if isinstance(actual, list | dict | str) and len(actual) == self.count:
            return None
        return f"{actual!r} does not have length {self.count}"


RV: Any = Re(r"[1-9][0-9]*")
UID: Any = Re(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME: Any = Re(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def matches(actual: Any, expected: Any, saved: Mapping[str, Any], at: str = "") -> str | None:
    """None when `actual` fits the pattern `expected`, else where and why it does not."""
    if isinstance(expected, Matcher):
        problem = expected.check(actual, saved)
        return f"{at or '.'}: {problem}" if problem else None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{at or '.'}: expected an object, got {actual!r}"
        for key, want in expected.items():
            if want is ABSENT:
                if key in actual:
                    return f"{at}.{key}: expected absent, got {actual[key]!r}"
                continue
            if key not in actual:
                return f"{at}.{key}: missing (have {sorted(actual)})"
            problem = matches(actual[key], want, saved, f"{at}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{at or '.'}: expected {len(expected)} items, got {actual!r}"
        for index, (item, want) in enumerate(zip(actual, expected, strict=True)):
            problem = matches(item, want, saved, f"{at}[{index}]")
            if problem:
                return problem
        return None
    expected = substitute(expected, saved)
    return None if actual == expected else f"{at or '.'}: {actual!r} != {expected!r}"


_NAME = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def substitute(value: Any, saved: Mapping[str, Any]) -> Any:
    """`value` with `{name}` replaced by saved values (recursively through dicts and lists)."""
    if isinstance(value, str):
        whole = _NAME.fullmatch(value)
        if whole and whole.group(1) in saved:
            return saved[whole.group(1)]
        return _NAME.sub(
            lambda m: str(saved[m.group(1)]) if m.group(1) in saved else m.group(0), value
        )
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    return value


def pick(document: Any, path: str) -> Any:
    """`document` at a dotted path; list items by index (`items.0.metadata.name`)."""
    for part in path.split("."):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


# ---- sequences --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    status: int
    body: Any = None
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    who: str = "alice"
    expect: Any = None  # pattern for the JSON body (None: not checked)
    expect_headers: Mapping[str, Any] = field(default_factory=dict)  # lower-case names
    save: Mapping[str, str] = field(default_factory=dict)  # name -> dotted path in the body
    text: Any = None  # pattern for the body as text (non-JSON answers)


@dataclass(frozen=True)
class Watch:
    """Opens a watch (live server only), read by later `Events` steps under `name`."""

    path: str
    name: str = "w"
    who: str = "alice"
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    expect: Any = None  # pattern for the body of a refused watch


@dataclass(frozen=True)
class Events:
    """The next events of watch `name`, each matching its pattern in order; `end` says the
    stream must then end (the server closes it)."""

    expect: Seq[Any]
    name: str = "w"
    end: bool = False
    save: Mapping[str, str] = field(default_factory=dict)  # name -> "INDEX.dotted.path"
    skip_bookmarks: bool = False


@dataclass(frozen=True)
class Eventually:
    """`steps` run again (after a pause) until they all pass, for what a server does after it
    answered (compaction); at most `seconds`."""

    steps: tuple[Step | Watch | Events, ...]
    seconds: float = 15.0


@dataclass(frozen=True)
class Sequence:
    name: str
    source: str  # the kube file and test (or doc section) this is written from
    steps: tuple[Step | Watch | Events | Eventually, ...]
    divergence: str | None = None  # set: a strict xfail until nodus does as kube does
    accelerators: bool = False  # seed the accelerator catalog first (in-process)


def params(sequences: Seq[Sequence]) -> list[Any]:
    names = [s.name for s in sequences]
    assert len(names) == len(set(names)), "sequence names must be unique"
    return [
        pytest.param(
            s,
            id=s.name,
            marks=[pytest.mark.xfail(strict=True, reason=s.divergence)] if s.divergence else [],
        )
        for s in sequences
    ]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any
    raw: bytes


class Transport(Protocol):
    def send(self, step: Step, path: str, body: Any) -> Answer: ...

    def open_watch(self, watch: Watch, path: str) -> Any: ...


def run(sequence: Sequence, transport: Transport, unique: str = "") -> dict[str, Any]:
    """Sends every step; fails with the step, the request and what was wrong."""
    saved: dict[str, Any] = {"u": unique}
    watches: dict[str, Any] = {}
    try:
        for index, step in enumerate(sequence.steps):
            label = f"{sequence.name} step {index}"
            if isinstance(step, Eventually):
                deadline = time.monotonic() + step.seconds
                while True:
                    try:
                        _run_steps(step.steps, transport, saved, watches, label)
                        break
                    except AssertionError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
            else:
                _run_steps((step,), transport, saved, watches, label)
    finally:
        for watcher in watches.values():
            watcher.close()
    return saved


def _run_steps(
    steps: Seq[Step | Watch | Events],
    transport: Transport,
    saved: dict[str, Any],
    watches: dict[str, Any],
    label: str,
) -> None:
    for step in steps:
        if isinstance(step, Step):
            _send(step, transport, saved, label)
        elif isinstance(step, Watch):
            if step.name in watches:
                watches.pop(step.name).close()
            watcher = transport.open_watch(step, substitute(step.path, saved))
            watches[step.name] = watcher
            assert watcher.status == step.status, (
                f"{label}: watch answered {watcher.status}, expected {step.status}"
            )
            if step.expect is not None:
                problem = matches(watcher.body_json(), step.expect, saved)
                assert problem is None, f"{label}: {problem}"
        else:
            _read_events(step, watches[step.name], saved, label)


def _send(step: Step, transport: Transport, saved: dict[str, Any], label: str) -> None:
    path = substitute(step.path, saved)
    body = substitute(step.body, saved)
    answer = transport.send(step, path, body)
    where = f"{label}: {step.method} {path}"
    assert answer.status == step.status, (
        f"{where}: status {answer.status}, expected {step.status}; body {answer.raw[:1500]!r}"
    )
    if step.expect is not None:
        problem = matches(answer.body, step.expect, saved)
        assert problem is None, f"{where}: {problem}; body {answer.raw[:1500]!r}"
    if step.text is not None:
        problem = matches(answer.raw.decode(errors="replace"), step.text, saved, "text")
        assert problem is None, f"{where}: {problem}"
    for name, want in step.expect_headers.items():
        problem = matches(answer.headers.get(name.lower(), ABSENT), want, saved, name)
        if want is ABSENT:
            problem = None if name.lower() not in answer.headers else f"{name} present"
        assert problem is None, f"{where}: header {problem}"
    for name, path_in_body in step.save.items():
        saved[name] = pick(answer.body, path_in_body)


def _read_events(step: Events, watcher: Any, saved: dict[str, Any], label: str) -> None:
    got: list[Any] = []
    while len(got) < len(step.expect):
        event = watcher.next(15.0)
        assert event is not None, f"{label}: the stream ended after {got!r}"
        if step.skip_bookmarks and event.get("type") == "BOOKMARK":
            continue
        got.append(event)
    for index, (event, want) in enumerate(zip(got, step.expect, strict=True)):
        problem = matches(event, want, saved, f"[{index}]")
        assert problem is None, f"{label}: event {problem}; events {got!r}"
    for name, where in step.save.items():
        index, _, rest = where.partition(".")
        saved[name] = pick(got[int(index)], rest)
    if step.end:
        while (event := watcher.next(15.0)) is not None:
            bookmark = step.skip_bookmarks and event.get("type") == "BOOKMARK"
            assert bookmark, f"{label}: expected the stream to end, got {event!r}"


# ---- building blocks for sequences ------------------------------------------------------------


def runtime(name: str = "conf", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A small valid TrainingRuntime (the fields CONTRACT.md requires)."""
    body: dict[str, Any] = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name},
        "spec": {
            "image": IMAGE,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
            # a training task without it draws one of our spec warnings (compatibility row 2)
            "requires": {"data": True},
            **spec,
        },
    }
    if namespace:
        body["metadata"]["namespace"] = namespace
    return body


def with_meta(body: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """`body` with more metadata (a shallow copy; metadata keys replaced)."""
    return {**body, "metadata": {**body["metadata"], **metadata}}


def failure(code: int, reason: str, message: Any = ANY, details: Any = None) -> dict[str, Any]:
    """The metav1.Status kube writes for an error (our extra fields are allowed around it)."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        status["details"] = details
    return status


def tr_details(name: str, **more: Any) -> dict[str, Any]:
    """`details` of an error about one TrainingRuntime, as a CRD's store names it."""
    return {"name": name, "group": "nodus.dev", "kind": "trainingruntimes", **more}


def invalid(name: str, message: Any, causes: Any) -> dict[str, Any]:
    """A 422 Invalid about a TrainingRuntime: details.kind is the Kind, as NewInvalid writes."""
    return failure(
        422,
        "Invalid",
        message,
        {"name": name, "group": "nodus.dev", "kind": "TrainingRuntime", "causes": causes},
    )


def cause(reason: str, field_path: str, message: Any = ANY) -> dict[str, Any]:
    return {"reason": reason, "message": message, "field": field_path}


def create(name: str = "conf", save_as: str = "", **spec: Any) -> Step:
    """POST a runtime (201), saving its resourceVersion and uid as `{save_as}rv`/`{save_as}uid`."""
    return Step(
        "POST",
        TRS,
        201,
        runtime(name, **spec),
        save={f"{save_as}rv": "metadata.resourceVersion", f"{save_as}uid": "metadata.uid"},
    )


def get(name: str, status: int = 200, expect: Any = None, **kw: Any) -> Step:
    return Step("GET", f"{TRS}/{name}", status, expect=expect, **kw)


def merge(name: str, body: Any, status: int = 200, expect: Any = None, **kw: Any) -> Step:
    return Step("PATCH", f"{TRS}/{name}", status, body, MERGE, expect=expect, **kw)


def gone(name: str) -> Step:
    return get(
        name,
        404,
        failure(
            404, "NotFound", f'trainingruntimes.nodus.dev "{name}" not found', tr_details(name)
        ),
    )
