"""/metrics: request counts and latency by kube verb, open watches, event-log gauges, access."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from runtimes.api import metrics
from runtimes.storage import store
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"


def scrape(client: Client | None = None, **extra: Any) -> dict[tuple[str, frozenset[Any]], float]:
    response = (client or Client()).get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def requests(samples: dict[tuple[str, frozenset[Any]], float], **labels: str) -> float:
    key = ("apiserver_request_total", frozenset({"subresource": "", **labels}.items()))
    return samples.get(key, 0.0)


def test_it_counts_requests_by_kube_verb_resource_and_code(
    api: Callable[[str | None], ApiClient],
) -> None:
    alice = api("alice")
    before = scrape()
    assert alice.post(TRS, runtime_manifest()).status_code == 201
    assert alice.get(f"{TRS}/sft-demo").status_code == 200
    assert alice.get(f"{TRS}/missing").status_code == 404
    assert alice.get(TRS).status_code == 200
    assert alice.patch(f"{TRS}/sft-demo", {"metadata": {"labels": {"x": "y"}}}).status_code == 200
    after = scrape()
    for verb, code in [("create", "201"), ("get", "200"), ("get", "404"), ("list", "200")]:
        labels = {"verb": verb, "resource": "trainingruntimes", "code": code}
        assert requests(after, **labels) - requests(before, **labels) == 1, (verb, code)
    patched = {"verb": "patch", "resource": "trainingruntimes", "code": "200"}
    assert requests(after, **patched) - requests(before, **patched) == 1


def test_it_times_requests_in_a_histogram(api: Callable[[str | None], ApiClient]) -> None:
    alice = api("alice")
    alice.post(TRS, runtime_manifest())
    key = (
        "apiserver_request_duration_seconds_count",
        frozenset({"verb": "get", "resource": "trainingruntimes", "subresource": ""}.items()),
    )
    before = scrape().get(key, 0.0)
    for _ in range(3):
        alice.get(f"{TRS}/sft-demo")
    after = scrape()
    assert after[key] - before == 3
    inf = (key[0].replace("_count", "_bucket"), key[1] | {("le", "+Inf")})
    assert after[inf] == after[key]


def test_it_labels_non_resource_paths_by_method_only() -> None:
    before = scrape()
    Client().get("/livez")
    Client().get("/apis/nodus.dev/v1beta1/no-such-thing/at/all/here")
    after = scrape()
    labels = {"verb": "GET", "resource": "", "code": "200"}
    assert requests(after, **labels) - requests(before, **labels) >= 1
    assert not any(
        name == "apiserver_request_total" and dict(labels).get("resource") == "no-such-thing"
        for name, labels in after
    )


def test_it_gauges_open_watches() -> None:
    key = ("apiserver_longrunning_requests", frozenset({"verb": "WATCH", "resource": "tr"}.items()))
    before = scrape().get(key, 0.0)
    metrics.watch_opened("tr")
    metrics.watch_opened("tr")
    assert scrape()[key] == before + 2
    metrics.watch_closed("tr")
    metrics.watch_closed("tr")
    assert scrape()[key] == before


def test_it_reports_the_event_log_revision(api: Callable[[str | None], ApiClient]) -> None:
    api("alice").post(TRS, runtime_manifest())
    samples = scrape()
    assert samples[("nodus_event_log_revision", frozenset())] == store.current_revision()
    assert ("nodus_event_log_lag_revisions", frozenset()) in samples


def test_it_lets_only_loopback_or_staff_scrape(
    api: Callable[[str | None], ApiClient], settings: Any
) -> None:
    remote = {"REMOTE_ADDR": "10.1.2.3"}
    refused = Client().get("/metrics", **remote)
    assert refused.status_code == 403
    assert refused.json()["reason"] == "Forbidden"
    assert "system:anonymous" in refused.json()["message"]
    alice = api("alice")
    not_staff = alice.client.get("/metrics", headers=alice.headers, **remote)
    assert not_staff.status_code == 403
    assert '"alice"' in not_staff.json()["message"]
    root = api("root")
    assert root.client.get("/metrics", headers=root.headers, **remote).status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="::1").status_code == 200
    settings.NODUS_METRICS_ANONYMOUS = True
    assert Client().get("/metrics", **remote).status_code == 200


async def test_it_counts_a_watch_while_its_stream_is_open(monkeypatch: pytest.MonkeyPatch) -> None:
    from runtimes.api import watch

    async def one_event_then_wait(_plan: Any) -> Any:
        yield [{"type": "ADDED", "object": {}}]
        await asyncio.Event().wait()  # a quiet watch: nothing more to say

    monkeypatch.setattr(watch, "watch_chunks", one_event_then_wait)
    gauge = metrics.OPEN_WATCHES.labels("WATCH", "trainingruntimes")
    before = gauge._value.get()
    plan = SimpleNamespace(rt=SimpleNamespace(plural="trainingruntimes"))
    stream = watch._lines(plan)  # type: ignore[arg-type]
    assert await anext(stream) == b""  # headers only: not counted yet
    assert gauge._value.get() == before
    assert b"ADDED" in await anext(stream)
    assert gauge._value.get() == before + 1
    await stream.aclose()  # the client went away
    assert gauge._value.get() == before
