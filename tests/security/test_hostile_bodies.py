"""Threat rows: ReDoS patterns, the YAML "billion laughs", deep nesting and $ref cycles.

A corpus of hostile bodies walks every write path (create, PUT, PATCH as merge, JSON and apply
patch, the /status subresource, /compile) in every media type it takes, and the console's
publish check and Parameters check, against a live server. Each must get a 4xx Status (an
answer page in the console), never a 500 or a RecursionError; /livez keeps answering within a
second throughout; the YAML bomb adds less than 50 MB of RSS; the ReDoS input answers in well
under 50 ms.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
import yaml

from runtimes.apimachinery import bounds
from tests.support.availability import livez_stays_up
from tests.support.liveserver import LiveServer
from tests.support.watch_live import DEMO, manifest

JSON = "application/json"
YAML = "application/yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
TARGET = f"{DEMO}/target"
REDOS = "^(a+)+$"
ATTACK = "a" * 28 + "!"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": REDOS},
        "extra": {},  # drawn as a JSON textarea
        "tags": {"type": "array", "items": {"type": "string"}},
        "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "amount": {"type": "integer"},
    },
}


@dataclass(frozen=True)
class Path:
    name: str
    method: str
    url: str
    media: str
    who: str = "alice"


# Status writes need the status permission: root (a platform admin) holds it, and the body is
# only read once the caller may write.
PATHS = [
    Path("create", "POST", DEMO, JSON),
    Path("create", "POST", DEMO, YAML),
    Path("put", "PUT", TARGET, JSON),
    Path("put", "PUT", TARGET, YAML),
    Path("patch", "PATCH", TARGET, MERGE),
    Path("patch", "PATCH", TARGET, JSON_PATCH),
    Path("apply", "PATCH", TARGET + "?fieldManager=hostile", APPLY),
    Path("status-put", "PUT", f"{TARGET}/status", JSON, "root"),
    Path("status-put", "PUT", f"{TARGET}/status", YAML, "root"),
    Path("status-patch", "PATCH", f"{TARGET}/status", MERGE, "root"),
    Path("status-patch", "PATCH", f"{TARGET}/status", JSON_PATCH, "root"),
    Path("status-apply", "PATCH", f"{TARGET}/status?fieldManager=hostile", APPLY, "root"),
    Path("compile", "POST", f"{TARGET}/compile", JSON),
    Path("compile", "POST", f"{TARGET}/compile", YAML),
]
JSON_FAMILY = {JSON, MERGE, JSON_PATCH}


def _nested_json(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def billion_laughs() -> bytes:
    """Under 1 KB whose aliases expand to 9**9 strings, inside a free-form parameters schema."""
    lines = [
        "apiVersion: nodus.dev/v1beta1",
        "kind: TrainingRuntime",
        "metadata: {name: target}",
        "spec:",
        "  parameters:",
        "    x-lol:",
        "      a0: &a0 [" + ",".join(['"lol"'] * 9) + "]",
    ]
    lines += [f"      a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
    return ("\n".join(lines) + "\n").encode()


# name -> (body, the codes it may get). Bodies are bytes in the path's media type.
JSON_BODIES: dict[str, tuple[bytes, set[int]]] = {
    "deep-10000": (b"[" * 10_000 + b"]" * 10_000, {400}),
    "deep-101": (_nested_json(101), {400}),
    "nodes-1M": (b"[" + b",".join([b"{}"] * 1_000_000) + b"]", {413}),
    "huge-number": (b'{"metadata": {"name": "target"}, "spec": {"x": 1e999}}', {400}),
    "long-integer": (b'{"spec": {"x": ' + b"9" * 5000 + b"}}", {400}),
    "nan": (b'{"spec": {"x": NaN}}', {400}),
    "invalid-utf8": (b'{"metadata": {"name": "\xff\xfe"}}', {400}),
}
YAML_BODIES: dict[str, tuple[bytes, set[int]]] = {
    "billion-laughs": (billion_laughs(), {400}),
    "deep-10000": (b"[" * 10_000 + b"]" * 10_000, {400}),
    "deep-block-150": (
        "".join("  " * i + f"k{i}:\n" for i in range(150)).encode() + b"  " * 150 + b"x\n",
        {400},
    ),
    "nodes": (b"[" + b",".join([b"0"] * (bounds.MAX_NODES + 1)) + b"]", {413}),
    "nan": (b"spec: {x: .nan}\n", {400}),
    # Out of a double's range, go-yaml (and so kube) reads these as strings: the body is then
    # refused for what it lacks (no kind: 400; a compile draft: 422), without a 500.
    "infinity": (b"spec: {x: 1.0e+999}\n", {400, 422}),
    "long-integer": (b"spec: {x: " + b"9" * 5000 + b"}\n", {400, 422}),
    "binary": (b"spec: {x: !!binary aGk=}\n", {400}),
    "python-object": (b"spec: !!python/object/apply:os.system [echo]\n", {400}),
    "invalid-utf8": (b"metadata: {name: \xff\xfe}\n", {400}),
}
JSON_PATCH_BODIES: dict[str, tuple[bytes, set[int]]] = {
    "ops-10001": (orjson.dumps([{"op": "test", "path": "/kind"}] * 10_001), {413}),
    "copy-doubling": (
        orjson.dumps([{"op": "copy", "from": "/spec", "path": f"/spec/x{i}"} for i in range(40)]),
        {413},
    ),
    "deep-path": (orjson.dumps([{"op": "add", "path": "/a" * 200, "value": 1}]), {400}),
    "long-index": (
        orjson.dumps([{"op": "replace", "path": "/spec/command/" + "9" * 5000, "value": "x"}]),
        {422},
    ),
    "superscript-index": (
        orjson.dumps([{"op": "add", "path": "/spec/command/²/x", "value": "x"}]),
        {422},
    ),
    # Each copy puts /spec/x inside itself: one level deeper per operation, past the bound.
    "copy-into-itself": (
        orjson.dumps(
            [{"op": "add", "path": "/spec/x", "value": json.loads(_nested_json(80))}]
            + [{"op": "copy", "from": "/spec/x", "path": "/spec/x/a"}] * 30
        ),
        {400},
    ),
}


def _cases() -> Iterator[Any]:
    for path in PATHS:
        family = JSON_BODIES if path.media in JSON_FAMILY else YAML_BODIES
        bodies = dict(family)
        if path.media == JSON_PATCH:
            bodies.update(JSON_PATCH_BODIES)
        if path.media == MERGE:
            bodies["deep-merge-patch"] = (_nested_json(10_000), {400})
        for name, (body, codes) in bodies.items():
            yield pytest.param(path, body, codes, id=f"{path.name}-{path.media}-{name}")


CASES = list(_cases())


@pytest.fixture(scope="module")
def clients(daphne_server: LiveServer) -> Iterator[dict[str, httpx.Client]]:
    made = {who: daphne_server.client(who) for who in ("alice", "root")}
    for client in made.values():
        client.timeout = httpx.Timeout(60)
    created = made["alice"].post(DEMO, json=manifest("target", parameters=SCHEMA))
    assert created.status_code == 201, created.text
    yield made
    for client in made.values():
        client.close()


def _status(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith(JSON), response.text[:300]
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status", body
    assert body["code"] == response.status_code
    assert body.get("fix"), body
    return body


def _send(clients: dict[str, httpx.Client], path: Path, body: bytes, query: str = "") -> Any:
    url = path.url + (("&" if "?" in path.url else "?") + query if query else "")
    return clients[path.who].request(
        path.method, url, content=body, headers={"Content-Type": path.media}
    )


def test_every_write_path_answers_hostile_bodies_with_a_4xx_status(
    daphne_server: LiveServer, clients: dict[str, httpx.Client]
) -> None:
    answers: list[tuple[str, int]] = []
    with livez_stays_up(daphne_server.url):
        for case in CASES:
            path, body, codes = case.values
            response = _send(clients, path, body)
            answers.append((case.id, response.status_code))
            assert response.status_code in codes, (case.id, response.text[:300])
            assert response.elapsed.total_seconds() < 5, case.id  # refused early, not worked on
            _status(response)
    assert len(answers) == len(CASES)
    assert "Traceback" not in daphne_server.log()
    assert "RecursionError" not in daphne_server.log()


@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.name}-{p.media}")
def test_duplicate_keys_are_refused_under_strict_field_validation(
    clients: dict[str, httpx.Client], path: Path
) -> None:
    if path.media in JSON_FAMILY:
        body = (
            b'{"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", '
            b'"kind": "TrainingRuntime"}'
        )
        if path.media == JSON_PATCH:
            body = b'[{"op": "test", "op": "test", "path": "/kind", "value": "TrainingRuntime"}]'
    else:
        body = b"apiVersion: nodus.dev/v1beta1\nkind: TrainingRuntime\nkind: TrainingRuntime\n"
    response = _send(clients, path, body, "fieldValidation=Strict")
    if path.name == "compile":  # a draft is read, not written: fieldValidation is not its option
        assert response.status_code < 500, response.text
        return
    if path.media in JSON_FAMILY and path.method == "PATCH":
        # kube: a patch's repeated keys make the patch invalid (422 about the patch).
        assert response.status_code == 422, response.text
        assert "strict decoding error: " in _status(response)["message"]
        assert "duplicate field" in _status(response)["message"]
        return
    assert response.status_code == 400, response.text
    message = _status(response)["message"]
    if path.media in JSON_FAMILY:
        assert 'strict decoding error: duplicate field "kind"' in message
    else:  # go-yaml's words
        assert 'line 3: key "kind" already set in map' in message


def test_the_yaml_bomb_adds_under_50_mb_of_rss(
    daphne_server: LiveServer, clients: dict[str, httpx.Client]
) -> None:
    before = _peak_rss_mb(daphne_server)
    started = time.perf_counter()
    for path in (p for p in PATHS if p.media in (YAML, APPLY)):
        response = _send(clients, path, billion_laughs())
        assert response.status_code == 400, response.text
        assert "anchors and aliases" in _status(response)["message"]
    elapsed = time.perf_counter() - started
    assert _peak_rss_mb(daphne_server) - before < 50
    assert elapsed < 10


def _peak_rss_mb(server: LiveServer) -> float:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize(
    ("parameters", "field", "words"),
    [
        (
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a)\\1"}}},
            "spec.parameters.properties.x.pattern",
            "backreference",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)b"}}},
            "spec.parameters.properties.x.pattern",
            "lookahead",
        ),
        (
            {"type": "object", "patternProperties": {"(?<!a)b": {}}},
            "spec.parameters.patternProperties[(?<!a)b]",
            "lookbehind",
        ),
        ({"type": "object", "$ref": "#"}, "spec.parameters[$ref]", "loops back"),
        (
            {
                "type": "object",
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "properties": {"depth": {"$ref": "#/$defs/a"}},
            },
            "spec.parameters[$defs].a[$ref]",
            "loops back",
        ),
    ],
    ids=["backreference", "lookahead", "lookbehind-name", "ref-self", "ref-indirect"],
)
def test_unsafe_parameter_schemas_are_refused_at_admission(
    clients: dict[str, httpx.Client], parameters: Any, field: str, words: str
) -> None:
    alice = clients["alice"]
    spec = {"parameters": parameters}
    current = alice.get(TARGET).json()
    writes: list[tuple[str, str, bytes, str]] = [
        ("POST", DEMO, orjson.dumps(manifest("unsafe", **spec)), JSON),
        ("POST", DEMO, yaml.safe_dump(manifest("unsafe", **spec)).encode(), YAML),
        ("PUT", TARGET, orjson.dumps({**current, "spec": {**current["spec"], **spec}}), JSON),
        ("PATCH", TARGET, orjson.dumps({"spec": spec}), MERGE),
        ("PATCH", TARGET, orjson.dumps([{"op": "add", "path": "/spec/parameters",
                                         "value": parameters}]), JSON_PATCH),
        ("PATCH", TARGET + "?fieldManager=hostile&force=true",
         yaml.safe_dump(manifest("target", **spec)).encode(), APPLY),
    ]  # fmt: skip
    for method, url, body, media in writes:
        response = alice.request(method, url, content=body, headers={"Content-Type": media})
        assert response.status_code == 422, (method, media, response.text)
        status = _status(response)
        [cause] = status["details"]["causes"]
        assert cause["field"] == field
        assert words in cause["message"]
        assert field in status["fix"]


def test_the_redos_pattern_answers_compile_and_the_parameters_check_at_once(
    daphne_server: LiveServer, clients: dict[str, httpx.Client]
) -> None:
    alice = clients["alice"]
    console = _console(daphne_server, "alice")
    check = "/p/demo/runtimes/target/parameters/check"

    def compile_once() -> httpx.Response:
        return alice.post(f"{TARGET}/compile", json={"parameters": {"name": ATTACK}})

    def check_once() -> httpx.Response:
        return console.post(check, data={"p.name": ATTACK})

    # On a backtracking engine this pattern would run for hours: the clients' timeouts make that
    # a failure here; how fast RE2 answers is measured by `benchmarks/run.py abuse`.
    with livez_stays_up(daphne_server.url):
        compiled = compile_once()
        checked = check_once()
    assert compiled.status_code == 422
    fields = [cause["field"] for cause in _status(compiled)["details"]["causes"]]
    assert "parameters.name" in fields
    assert checked.status_code == 200
    assert "Must match the pattern" in checked.text


def _console(server: LiveServer, who: str) -> httpx.Client:
    browser = httpx.Client(base_url=server.url, timeout=60)
    page = browser.get("/login")
    token = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    done = browser.post(
        "/login", data={"username": who, "password": f"{who}-pass", "csrfmiddlewaretoken": token}
    )
    assert done.status_code == 302, done.text
    browser.headers["X-CSRFToken"] = browser.cookies["csrftoken"]
    return browser


CONSOLE_MANIFESTS = {
    "billion-laughs": (billion_laughs(), "anchors and aliases"),
    "deep-10000": (b"[" * 10_000 + b"]" * 10_000, "nested more than 100 levels"),
    "nan": (b"kind: TrainingRuntime\nspec: {x: .nan}\n", "NaN and infinities"),
    "binary": (b"kind: TrainingRuntime\nspec: {x: !!binary aGk=}\n", "no JSON form"),
    "backreference": (
        yaml.safe_dump(manifest("unsafe", parameters={"type": "object", "properties": {
            "x": {"type": "string", "pattern": "(a)\\1"}}})).encode(),
        "backreference",
    ),
    "ref-loop": (
        yaml.safe_dump(manifest("unsafe", parameters={"type": "object", "$ref": "#"})).encode(),
        "loops back",
    ),
}  # fmt: skip
PARAMETER_FORMS = {
    "deep-json": {"p.extra.$json": "[" * 10_000 + "]" * 10_000},
    "nan-json": {"p.extra.$json": "NaN"},
    "long-length": {"p.tags.$len": "9" * 5000},
    "huge-length": {"p.tags.$len": "99999999"},
    "long-variant": {"p.choice.$variant": "9" * 5000, "p.choice.$shown": "0"},
    "long-integer": {"p.amount": "9" * 5000},
    "long-amount": {"job.amount": "9" * 5000},
    "long-edit": {"_op": "up:p.tags." + "9" * 5000, "p.tags.$len": "1", "p.tags.0": "x"},
    "superscript-edit": {"_op": "remove:p.tags.²", "p.tags.$len": "1", "p.tags.0": "x"},
    "redos": {"p.name": ATTACK * 1000},
}


def test_the_console_checks_answer_hostile_input_without_a_500(
    daphne_server: LiveServer, clients: dict[str, httpx.Client]
) -> None:
    console = _console(daphne_server, "alice")
    with livez_stays_up(daphne_server.url):
        for name, (text, words) in CONSOLE_MANIFESTS.items():
            response = console.post(
                "/publish/check",
                data={"project": "demo", "manifest": text.decode(errors="replace")},
            )
            assert response.status_code == 200, (name, response.text[:300])
            assert words in response.text.replace("&#x27;", "'"), (name, response.text[:2000])
        for name, form in PARAMETER_FORMS.items():
            started = time.perf_counter()
            response = console.post("/p/demo/runtimes/target/parameters/check", data=form)
            assert response.status_code == 200, (name, response.text[:300])
            assert time.perf_counter() - started < 5, name
    assert "Traceback" not in daphne_server.log()
