"""The official `kubernetes` Python client against a live daphne: paged lists with continue,
and `watch.Watch().stream` resuming after the server ends each watch, under parallel writers,
with every revision seen exactly once and in order; a compacted start point raises 410."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException

from tests.support.watch_live import manifest

GROUP, VERSION, PLURAL = "nodus.dev", "v1beta1", "trainingruntimes"


@pytest.fixture
def custom(tight_server: Any) -> k8s.CustomObjectsApi:
    return api_for(tight_server, "alice")


def api_for(server: Any, who: str) -> k8s.CustomObjectsApi:
    configuration = k8s.Configuration(host=server.url)
    configuration.api_key = {"authorization": server.tokens[who]}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return k8s.CustomObjectsApi(k8s.ApiClient(configuration))


def create(api: k8s.CustomObjectsApi, name: str, tag: str) -> dict[str, Any]:
    # The client sends no Content-Type on create; the server reads it as JSON, as kube does.
    body: dict[str, Any] = api.create_namespaced_custom_object(
        GROUP, VERSION, "demo", PLURAL, manifest(name, {"t": tag})
    )
    return body


def annotate(api: k8s.CustomObjectsApi, name: str, value: str) -> int:
    # Without _content_type the client turns a dict body into a strategic merge patch, which
    # custom resources refuse (415), on kube-apiserver as here.
    patched = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "demo",
        PLURAL,
        name,
        {"metadata": {"annotations": {"v": value}}},
        _content_type="application/merge-patch+json",
    )
    return int(patched["metadata"]["resourceVersion"])


def test_it_pages_a_list_with_limit_and_continue(custom: k8s.CustomObjectsApi) -> None:
    tag = uuid.uuid4().hex[:10]
    for i in range(5):
        create(custom, f"page-{i}-{tag}", tag)
    seen: list[str] = []
    versions: set[str] = set()
    token = None
    while True:
        page = custom.list_namespaced_custom_object(
            GROUP, VERSION, "demo", PLURAL, label_selector=f"t={tag}", limit=2, _continue=token
        )
        seen += [item["metadata"]["name"] for item in page["items"]]
        versions.add(page["metadata"]["resourceVersion"])
        token = page["metadata"].get("continue")
        if not token:
            break
    assert seen == [f"page-{i}-{tag}" for i in range(5)]
    assert len(versions) == 1


def test_it_resumes_watches_without_gaps_or_repeats_under_parallel_writers(
    tight_server: Any,
    custom: k8s.CustomObjectsApi,
) -> None:
    tag = uuid.uuid4().hex[:10]
    names = [f"par-{i}-{tag}" for i in range(3)]
    start = min(int(create(custom, n, tag)["metadata"]["resourceVersion"]) for n in names) - 1
    written: list[int] = []
    lock = threading.Lock()

    def writer(name: str) -> None:
        api = api_for(tight_server, "alice")  # one connection pool per thread
        for i in range(12):
            revision = annotate(api, name, str(i))
            with lock:
                written.append(revision)
            time.sleep(0.25)  # spread the writes over several server-side watch timeouts

    threads = [threading.Thread(target=writer, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    watcher = watch.Watch()
    seen: list[int] = []
    deadline = time.monotonic() + 60
    # No timeout_seconds: the server ends each watch after 2-3 s and the client resumes from
    # the last resourceVersion it saw (bookmarks included).
    for event in watcher.stream(
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "demo",
        PLURAL,
        label_selector=f"t={tag}",
        resource_version=str(start),
        allow_watch_bookmarks=True,
    ):
        if event["type"] == "BOOKMARK":
            continue
        seen.append(int(event["object"]["metadata"]["resourceVersion"]))
        if len(seen) >= len(names) * 13 or time.monotonic() > deadline:
            watcher.stop()
    for thread in threads:
        thread.join()
    created = seen[: len(names)]
    assert seen == sorted(set(seen))  # in order, nothing twice
    assert seen[len(names) :] == sorted(written)  # nothing missed
    assert len(created) == len(names)


def test_it_raises_410_for_a_compacted_start_point(custom: k8s.CustomObjectsApi) -> None:
    tag = uuid.uuid4().hex[:10]
    name = f"old-{tag}"
    old = create(custom, name, tag)["metadata"]["resourceVersion"]
    for i in range(80):  # well past the 60-revision window of tests/watch_settings.py
        annotate(custom, name, str(i))
    deadline = time.monotonic() + 20
    failure: ApiException | None = None
    while failure is None:
        try:
            for _event in watch.Watch().stream(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                "demo",
                PLURAL,
                label_selector=f"t={tag}",
                resource_version=old,
                timeout_seconds=1,
            ):
                break  # not compacted yet
        except ApiException as exc:
            failure = exc
        assert time.monotonic() < deadline, "the event log was never compacted"
        time.sleep(0.5)
    assert failure.status == 410
    assert "too old resource version" in str(failure.reason)


def test_the_dynamic_client_finds_the_kind_by_discovery(tight_server: Any) -> None:
    from kubernetes.dynamic import DynamicClient

    api = api_for(tight_server, "alice")
    name = f"dyn-{uuid.uuid4().hex[:8]}"
    create(api, name, "dynamic")
    dynamic = DynamicClient(api.api_client)
    runtimes = dynamic.resources.get(kind="TrainingRuntime")
    assert (runtimes.group_version, runtimes.name) == ("nodus.dev/v1beta1", PLURAL)
    assert name in [item.metadata.name for item in runtimes.get(namespace="demo").items]
    namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
    assert "demo" in [item.metadata.name for item in namespaces.get().items]
    events = dynamic.resources.get(api_version="v1", kind="Event")
    assert events.get(namespace="demo").kind == "EventList"


def test_kr8s_gets_runtimes_by_their_short_name(tight_server: Any, tmp_path: Any) -> None:
    import base64

    import kr8s
    import yaml

    name = f"kr8s-{uuid.uuid4().hex[:8]}"
    create(api_for(tight_server, "alice"), name, "kr8s")
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "nodus",
                        "cluster": {
                            "server": tight_server.https_url,
                            "certificate-authority-data": base64.b64encode(
                                tight_server.ca_pem
                            ).decode(),
                        },
                    }
                ],
                "users": [{"name": "alice", "user": {"token": tight_server.tokens["alice"]}}],
                "contexts": [
                    {
                        "name": "nodus",
                        "context": {"cluster": "nodus", "user": "alice", "namespace": "demo"},
                    }
                ],
                "current-context": "nodus",
            }
        )
    )
    api = kr8s.api(kubeconfig=str(kubeconfig))
    found = api.get("tr", namespace="demo")
    assert name in [obj.name for obj in found]
    assert all(obj.kind == "TrainingRuntime" for obj in found)
    assert "demo" in [ns.name for ns in api.get("namespaces")]
