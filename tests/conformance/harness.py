"""The conformance harness: request sequences as data, run in-process or against a live server.

A `Sequence` is what a real kube-apiserver 1.35 does for a CRD-backed resource, written down
from kube's own sources (its `source` names the file and test). Each `Step` sends one request
and states what kube answers: the status code, the response body (a pattern: see `matches`),
response headers, and values to remember for later steps (`save`). A `Watch` step opens a
watch (live server only) and `Events` reads the next events from it.

The patterns are in patterns.py. Strings in paths and bodies may name saved values as
`{name}` there too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

from tests.conformance.patterns import ABSENT, ANY, matches, pick, substitute

GV = "/apis/nodus.dev/v1beta1"
TRS = f"{GV}/namespaces/demo/trainingruntimes"
ACCS = f"{GV}/accelerators"
IMAGE = "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
# Sources more than one module cites.
DELETE_HANDLER = "apiserver pkg/endpoints/handlers/delete_test.go"
DRYRUN = "kubernetes test/integration/dryrun/dryrun_test.go"


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
    """A small valid TrainingRuntime (the fields the resource contract requires)."""
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


def delete(
    name: str, status: int = 200, expect: object = None, body: object = None, **kw: object
) -> Step:
    return Step("DELETE", f"{TRS}/{name}", status, body, expect=expect, **kw)  # type: ignore[arg-type]


def held(name: str = "a") -> Step:
    """Creates `name` with a finalizer, saving rv and uid."""
    return Step(
        "POST",
        TRS,
        201,
        with_meta(runtime(name), finalizers=["nodus.dev/hold"]),
        save={"rv": "metadata.resourceVersion", "uid": "metadata.uid"},
    )
