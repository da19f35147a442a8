"""The abuse rows that are one request each: hostile bodies, selectors, headers, /status.

Each row measures the attack and, in the same run against the same server, a benign request
of the same kind (the same endpoint, media type and caller), so the ratio says what the
hostile input costs beyond the request itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from benchmarks import abuse_bodies as bodies
from benchmarks.abuse_http import ConsoleSession, answer, raw_get, send
from benchmarks.abuse_probe import Answer, Outcome, Probe
from benchmarks.abuse_server import HOST, AbuseServer
from benchmarks.report import AbuseRow

APPLY = {"Content-Type": "application/apply-patch+yaml"}
YAML = {"Content-Type": "application/yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
FAKE_DIGEST = "sha256:" + "0" * 64


@dataclass
class Attacks:
    """The server under attack and the bounds every measurement keeps to."""

    server: AbuseServer
    bound: float
    rss_cap_mb: float

    def measure(
        self,
        label: str,
        call: Callable[[], Answer],
        bound: float | None = None,
        livez: bool = True,
        ends_server: bool = False,
    ) -> Outcome:
        restarted = self.server.ensure_up()  # an earlier row may have ended it
        probe = Probe(self.server.pid, HOST, self.server.port, self.bound, self.rss_cap_mb)
        outcome = probe.run(label, call, bound, livez)
        if restarted:
            outcome.extra["restarted"] = "(the server was started again before this request)"
        if not self.server.alive() and not outcome.killed and not ends_server:
            code = self.server.process.poll() if self.server.process else None
            outcome.extra["died"] = f"the server exited during this request (exit code {code})"
        elif outcome.seconds is None and not ends_server:
            # Unanswered: the server may still be working on it (a regex holding the GIL, a bomb
            # expanding), and the rows after this one would measure its tail. Start afresh.
            self.server.kill()
            outcome.extra["restart"] = "unanswered at the bound: the server was killed, restarted"
        return outcome

    def client(self, user: str) -> Any:
        return self.server.client(user, timeout=self.bound + 5)

    @property
    def collection(self) -> str:
        return self.server.collection()


def redos(at: Attacks) -> list[AbuseRow]:
    rows = []
    with at.client("editor") as editor, at.client("viewer") as viewer:
        created = {
            name: send(editor, "POST", at.collection, json=bodies.pattern_runtime(name, pattern))
            for name, pattern in (
                ("redos-benign", bodies.BENIGN_PATTERN),
                ("redos", bodies.REDOS_PATTERN),
            )
        }
        draft = bodies.compile_draft({"name": bodies.REDOS_INPUT})

        def compile_against(name: str) -> Callable[[], str]:
            return lambda: send(viewer, "POST", f"{at.collection}/{name}/compile", json=draft)

        baseline = at.measure(f"compile, {bodies.BENIGN_PATTERN}", compile_against("redos-benign"))
        attack = at.measure("compile", compile_against("redos"))
    rows.append(
        AbuseRow(
            f"ReDoS {bodies.REDOS_PATTERN} in spec.parameters, compile (28 a's and !)",
            "any editor creates it, then any viewer",
            attack,
            baseline,
            "< 50 ms",
            [f"creating the runtimes answered {created}"],
        )
    )
    at.server.ensure_up()  # the compile may have left it stuck, and so killed
    session = ConsoleSession(at.server.url, timeout=at.bound + 5)
    try:
        user = at.server.user("viewer")
        signed_in = session.login("viewer", user["password"]).status_code

        def check(name: str) -> Callable[[], str]:
            path = f"/p/{at.server.namespace}/runtimes/{name}/parameters/check"

            def post() -> str:
                response = session.post(path, {"p.name": bodies.REDOS_INPUT})
                shown = " (pattern error shown)" if "match" in response.text else ""
                return answer(response) + shown

            return post

        baseline = at.measure(f"console check, {bodies.BENIGN_PATTERN}", check("redos-benign"))
        attack = at.measure("console check", check("redos"))
    finally:
        session.close()
    rows.append(
        AbuseRow(
            f"ReDoS {bodies.REDOS_PATTERN}: the console's Parameters check",
            "any viewer (signed in)",
            attack,
            baseline,
            "< 50 ms",
            [f"console sign-in answered {signed_in}"],
        )
    )
    return rows


def yaml_bodies(at: Attacks) -> list[AbuseRow]:
    with at.client("editor") as editor:

        def apply(name: str, text: str) -> Callable[[], str]:
            url = f"{at.collection}/{name}?fieldManager=abuse"
            return lambda: send(editor, "PATCH", url, content=text, headers=APPLY)

        def create(text: str) -> Callable[[], str]:
            return lambda: send(editor, "POST", at.collection, content=text, headers=YAML)

        plain = bodies.plain_apply("plain-apply")
        bomb = bodies.billion_laughs("bomb")
        # The baseline first: the attack may end the server (the probe's RSS cap).
        baseline = at.measure(
            f"apply of a plain runtime, {len(plain)} B", apply("plain-apply", plain)
        )
        rows = [
            AbuseRow(
                f"billion laughs: {len(bomb)} B of YAML as apply-patch+yaml",
                "any editor",
                at.measure("billion laughs", apply("bomb", bomb)),
                baseline,
                "< 50 MB added RSS",
            )
        ]
        deep = bodies.deep_yaml("deep", 10_000)
        baseline = at.measure(
            "POST of a plain runtime as YAML", create(bodies.plain_apply("plain-yaml"))
        )
        rows.append(
            AbuseRow(
                "YAML nested 10,000 deep (POST application/yaml)",
                "any editor",
                at.measure("deep YAML", create(deep)),
                baseline,
                "a 4xx Status, never 500",
            )
        )
    return rows


def ref_cycle(at: Attacks) -> list[AbuseRow]:
    with at.client("editor") as editor, at.client("viewer") as viewer:

        def create_then_compile(name: str, cyclic: bool) -> Callable[[], str]:
            def call() -> str:
                created = send(editor, "POST", at.collection, json=bodies.ref_runtime(name, cyclic))
                if not created.startswith("201"):
                    return f"create {created}"
                url = f"{at.collection}/{name}/compile"
                draft = bodies.compile_draft({"depth": 1})
                return f"create 201, compile {send(viewer, 'POST', url, json=draft)}"

            return call

        baseline = at.measure("$ref chain that ends", create_then_compile("ref-chain", False))
        return [
            AbuseRow(
                "$ref cycle in a parameter schema, then compile",
                "any editor (compile: any viewer)",
                at.measure("$ref cycle", create_then_compile("ref-cycle", True)),
                baseline,
                "create refused (422), never 500",
            )
        ]


def status_writes(at: Attacks) -> list[AbuseRow]:
    patch = {"status": {"phase": "Ready", "imageDigest": FAKE_DIGEST}}
    rows = []
    with at.client("admin") as admin:
        for name in ("status-editor", "status-projadmin", "status-admin"):
            send(admin, "POST", at.collection, json=bodies.runtime(name))

        def write(user: str, name: str) -> Callable[[], str]:
            def call() -> str:
                with at.client(user) as client:
                    url = f"{at.collection}/{name}/status"
                    return send(client, "PATCH", url, json=patch, headers=MERGE)

            return call

        def phase(name: str) -> str:
            response = admin.get(f"{at.collection}/{name}")
            status = response.json().get("status") or {} if response.status_code == 200 else {}
            return f"{status.get('phase', '(none)')}, digest {status.get('imageDigest', '(none)')}"

        baseline = at.measure("the platform admin's PATCH /status", write("admin", "status-admin"))
        for user, who in (("editor", "an editor"), ("projadmin", "a project admin")):
            name = f"status-{user}"
            rows.append(
                AbuseRow(
                    f"PATCH /status to Ready with a fake digest, by {who}",
                    who,
                    at.measure(f"PATCH /status by {who}", write(user, name)),
                    baseline,
                    "403 Forbidden",
                    [f"status afterwards: {phase(name)}"],
                )
            )
    return rows


def labels(at: Attacks) -> list[AbuseRow]:
    with at.client("editor") as editor:

        def create(name: str, count: int) -> Callable[[], str]:
            body = bodies.runtime(name, labels=bodies.labels(count))
            return lambda: send(editor, "POST", at.collection, json=body)

        baseline = at.measure("one label", create("labels-1", 1))
        return [
            AbuseRow(
                "20,000 labels on one object (POST)",
                "any editor",
                at.measure("20,000 labels", create("labels-20000", 20_000)),
                baseline,
                "a fast 422 (labels bounded, as kube's 256 KiB)",
            )
        ]


def selectors(at: Attacks) -> list[AbuseRow]:
    rows = []
    token = {"Authorization": f"Bearer {at.server.token('viewer')}", "Accept": "application/json"}

    def get(target: str, headers: dict[str, str] = token) -> Callable[[], str]:
        return lambda: raw_get(HOST, at.server.port, target, headers, at.bound)

    for parameter, build, plain in (
        ("labelSelector", bodies.selector, "app=trainer"),
        ("fieldSelector", bodies.field_selector, "spec.task=SFT"),
    ):
        baseline = at.measure(f"{parameter}={plain}", get(f"{at.collection}?{parameter}={plain}"))
        for size in (20, 128):
            query = f"{parameter}={quote(build(size * 1024), safe='=,!')}"
            rows.append(
                AbuseRow(
                    f"{parameter} of {size} KB",
                    "anyone who may list",
                    at.measure(f"{size} KB {parameter}", get(f"{at.collection}?{query}")),
                    baseline,
                    "a 4xx Status (414 or 422), never a dropped connection",
                )
            )
    baseline = at.measure("GET /livez", get("/livez", {}))
    rows.append(
        AbuseRow(
            "a 64 KB request header",
            "anyone, unauthenticated",
            at.measure("64 KB header", get("/livez", {"X-Pad": "a" * 65536})),
            baseline,
            "431 Status",
        )
    )
    return rows


ROWS: list[Callable[[Attacks], list[AbuseRow]]] = [
    redos,
    yaml_bodies,
    ref_cycle,
    status_writes,
    labels,
    selectors,
]
