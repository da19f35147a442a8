"""The core/v1 group: Namespaces (the projects, read-only) and Events (the controller's).

Events are recorded through the controller's recorder and read over HTTP, as kubectl reads
them: lists and gets per project and across projects, kube's field selectors (the ones
`kubectl describe` sends), Tables with kube's event columns, and the same readers as the
project's runtimes. Writes are refused as kube refuses a verb a resource does not serve.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runtimes.controller.recorder import EventRecorder
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Project, RevisionCounter
from tests.support.api import ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

Api = Callable[[str | None], ApiClient]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
EVENTS = "/api/v1/namespaces/{}/events"


@pytest.fixture
def recorded(actors: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A runtime in demo and one in nodus, with one Warning and one Normal event each."""
    RevisionCounter.objects.get_or_create(pk=1)
    Project.objects.get_or_create(name="nodus")
    Project.objects.get_or_create(name="other")
    rt = lookup("trainingruntimes")
    assert rt is not None
    recorder = EventRecorder()
    runtimes = {}
    for project in ("demo", "nodus"):
        runtime = store.create(rt, project, runtime_manifest("sft")).object
        recorder.record(runtime, "Warning", "ImageNotFound", "no such image")
        recorder.record(runtime, "Normal", "DigestResolved", "image digest resolved")
        runtimes[project] = runtime
    return runtimes


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["metadata"]["name"] for item in response.json_body["items"]]


# -- namespaces ----------------------------------------------------------------------------------


def test_it_lists_the_projects_each_caller_may_read(api: Api, recorded: Any) -> None:
    assert names(api("alice").get("/api/v1/namespaces")) == ["demo", "nodus"]
    assert names(api("bob").get("/api/v1/namespaces")) == ["demo", "nodus"]
    assert names(api("charlie").get("/api/v1/namespaces")) == ["nodus"]
    assert names(api("root").get("/api/v1/namespaces")) == ["demo", "nodus", "other"]
    assert api(None).get("/api/v1/namespaces").status_code == 401
    listed = api("alice").get("/api/v1/namespaces").json_body
    assert (listed["kind"], listed["apiVersion"]) == ("NamespaceList", "v1")


def test_it_gets_a_namespace_with_its_phase_and_a_table(api: Api, recorded: Any) -> None:
    demo = api("charlie").get("/api/v1/namespaces/demo").json_body
    assert (demo["kind"], demo["metadata"]["name"], demo["status"]["phase"]) == (
        "Namespace",
        "demo",
        "Active",
    )
    assert demo["metadata"]["labels"] == {"kubernetes.io/metadata.name": "demo"}
    missing = api("alice").get("/api/v1/namespaces/nope")
    assert (missing.status_code, missing.json_body["message"]) == (
        404,
        'namespaces "nope" not found',
    )
    table = api("alice").get("/api/v1/namespaces", Accept=TABLE).json_body
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert [row["cells"][:2] for row in table["rows"]] == [["demo", "Active"], ["nodus", "Active"]]
    selected = api("root").get("/api/v1/namespaces?fieldSelector=metadata.name=other")
    assert names(selected) == ["other"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/namespaces"),
        ("PUT", "/api/v1/namespaces/demo"),
        ("PATCH", "/api/v1/namespaces/demo"),
        ("DELETE", "/api/v1/namespaces/demo"),
        ("GET", "/api/v1/namespaces?watch=1"),
    ],
)
def test_it_refuses_to_write_or_watch_namespaces(
    api: Api, recorded: Any, method: str, path: str
) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mine"}}
    response = api("root").request(method, path, body)
    assert response.status_code == 405
    assert response.json_body["reason"] == "MethodNotAllowed"
    assert response.json_body["message"] == (
        "the server does not allow this method on the requested resource"
    )
    assert not Project.objects.filter(name="mine").exists()


# -- events --------------------------------------------------------------------------------------


def test_it_shows_a_projects_events_to_its_readers(api: Api, recorded: Any) -> None:
    for who in ("alice", "bob", "root"):
        listed = api(who).get(EVENTS.format("demo"))
        assert len(names(listed)) == 2, who
        assert (listed.json_body["kind"], listed.json_body["apiVersion"]) == ("EventList", "v1")
    refused = api("charlie").get(EVENTS.format("demo"))
    assert refused.status_code == 403
    assert refused.json_body["message"] == (
        'events is forbidden: User "charlie" cannot list resource "events" in API group "" '
        'in the namespace "demo"'
    )
    assert api(None).get(EVENTS.format("demo")).status_code == 401
    # The managed project's events are everyone's to read, as its runtimes are.
    assert len(names(api("charlie").get(EVENTS.format("nodus")))) == 2
    # Across projects: only the readable ones.
    everywhere = api("charlie").get("/api/v1/events").json_body["items"]
    assert {e["metadata"]["namespace"] for e in everywhere} == {"nodus"}
    one = names(api("bob").get(EVENTS.format("demo")))[0]
    got = api("bob").get(EVENTS.format("demo") + f"/{one}")
    assert got.status_code == 200
    assert got.json_body["involvedObject"]["name"] == "sft"
    assert api("charlie").get(EVENTS.format("demo") + f"/{one}").status_code == 403


def test_it_selects_events_by_the_fields_kubectl_describe_sends(api: Api, recorded: Any) -> None:
    uid = recorded["demo"]["metadata"]["uid"]
    describe = (
        "involvedObject.name=sft,involvedObject.namespace=demo,"
        f"involvedObject.uid={uid},involvedObject.kind=TrainingRuntime"
    )
    assert len(names(api("bob").get(EVENTS.format("demo") + f"?fieldSelector={describe}"))) == 2
    for selector, expected in (
        ("type=Warning", ["ImageNotFound"]),
        ("reason=DigestResolved", ["DigestResolved"]),
        ("involvedObject.uid=someone-else", []),
        ("involvedObject.name!=sft", []),
        ("reportingComponent=nodus.dev/runtime-controller", ["DigestResolved", "ImageNotFound"]),
    ):
        listed = api("bob").get(EVENTS.format("demo") + f"?fieldSelector={selector}")
        assert listed.status_code == 200, listed.content
        reasons = sorted(e["reason"] for e in listed.json_body["items"])
        assert reasons == expected, selector
    unknown = api("bob").get(EVENTS.format("demo") + "?fieldSelector=spec.image=x")
    assert unknown.status_code == 400
    assert unknown.json_body["message"] == "field label not supported: spec.image"


def test_it_prints_events_with_kubes_event_columns(api: Api, recorded: Any) -> None:
    table = api("alice").get(EVENTS.format("demo"), Accept=TABLE).json_body
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    # pkg/printers/internalversion/printers.go: eventColumnDefinitions.
    assert columns == [
        ("Last Seen", 0),
        ("Type", 0),
        ("Reason", 0),
        ("Object", 0),
        ("Subobject", 1),
        ("Source", 1),
        ("Message", 0),
        ("First Seen", 1),
        ("Count", 1),
        ("Name", 1),
    ]
    rows = {row["cells"][2]: row["cells"] for row in table["rows"]}
    warning = rows["ImageNotFound"]
    assert warning[1] == "Warning"
    assert warning[3] == "trainingruntime/sft"
    assert warning[5] == "nodus.dev/runtime-controller, " + warning[5].split(", ", 1)[1]
    assert warning[6] == "no such image"
    assert warning[8] == 1


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_it_refuses_writes_to_events(api: Api, recorded: Any, method: str) -> None:
    one = names(api("root").get(EVENTS.format("demo")))[0]
    path = EVENTS.format("demo") + ("" if method == "POST" else f"/{one}")
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": one}}
    kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
    response = api("root").request(method, path, body, content_type=kind)
    assert response.status_code == 405, response.content
    assert response.json_body["reason"] == "MethodNotAllowed"
    assert 'resources of kind "events"' in response.json_body["message"]
    assert len(names(api("root").get(EVENTS.format("demo")))) == 2


def test_it_answers_404_for_events_in_our_group_and_runtimes_in_core(
    api: Api, recorded: Any
) -> None:
    assert api("alice").get("/apis/nodus.dev/v1beta1/namespaces/demo/events").status_code == 404
    assert api("alice").get("/api/v1/namespaces/demo/trainingruntimes").status_code == 404


# -- events.k8s.io/v1 ----------------------------------------------------------------------------

V1_EVENTS = "/apis/events.k8s.io/v1/namespaces/{}/events"


def test_it_serves_the_same_events_as_events_k8s_io_v1(api: Api, recorded: Any) -> None:
    uid = recorded["demo"]["metadata"]["uid"]
    listed = api("bob").get(V1_EVENTS.format("demo"))
    assert (listed.json_body["kind"], listed.json_body["apiVersion"]) == (
        "EventList",
        "events.k8s.io/v1",
    )
    by_reason = {e["reason"]: e for e in listed.json_body["items"]}
    warning = by_reason["ImageNotFound"]
    core = api("bob").get(EVENTS.format("demo") + f"/{warning['metadata']['name']}").json_body
    # pkg/apis/events/v1 conversion: the same object under the newer field names.
    assert warning["regarding"] == core["involvedObject"]
    assert warning["regarding"]["uid"] == uid
    assert warning["note"] == core["message"]
    assert warning["reportingController"] == core["reportingComponent"]
    assert warning["deprecatedCount"] == core["count"]
    assert warning["deprecatedSource"] == core["source"]
    assert warning["metadata"] == core["metadata"]
    assert "involvedObject" not in warning
    one = api("bob").get(V1_EVENTS.format("demo") + f"/{warning['metadata']['name']}")
    assert one.json_body == warning
    assert api("charlie").get(V1_EVENTS.format("demo")).status_code == 403
    missing = api("bob").get(V1_EVENTS.format("demo") + "/nope")
    assert missing.json_body["message"] == 'events.events.k8s.io "nope" not found'


def test_it_selects_events_k8s_io_v1_by_its_own_field_labels(api: Api, recorded: Any) -> None:
    uid = recorded["demo"]["metadata"]["uid"]
    path = V1_EVENTS.format("demo") + "?fieldSelector="
    selected = api("bob").get(path + f"regarding.uid={uid},type=Warning").json_body["items"]
    assert [e["reason"] for e in selected] == ["ImageNotFound"]
    assert (
        len(names(api("bob").get(path + "reportingController=nodus.dev/runtime-controller"))) == 2
    )
    core_label = api("bob").get(path + "involvedObject.name=sft")
    assert core_label.status_code == 400
    assert core_label.json_body["message"] == "field label not supported: involvedObject.name"


def test_it_lists_events_k8s_io_in_discovery(api: Api, recorded: Any) -> None:
    AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    groups = api("alice").get("/apis", Accept=AGGREGATED).json_body["items"]
    [events] = [g for g in groups if g["metadata"]["name"] == "events.k8s.io"]
    [resource] = events["versions"][0]["resources"]
    assert (resource["resource"], resource["scope"]) == ("events", "Namespaced")
    assert resource["verbs"] == ["get", "list"]
    assert api("alice").get("/apis/events.k8s.io").json_body["preferredVersion"] == {
        "groupVersion": "events.k8s.io/v1",
        "version": "v1",
    }
    listed = api("alice").get("/apis/events.k8s.io/v1").json_body
    assert [r["name"] for r in listed["resources"]] == ["events"]
    watch = api("alice").get(V1_EVENTS.format("demo") + "?watch=1")
    assert watch.status_code == 405


def test_auth_can_i_list_names_the_core_verbs_served(api: Api, recorded: Any) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "demo"},
    }
    answer = api("bob").post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review)
    rules = {
        (rule["apiGroups"][0], rule["resources"][0]): set(rule["verbs"])
        for rule in answer.json_body["status"]["resourceRules"]
    }
    assert rules[("", "events")] == {"get", "list", "watch"}
    assert rules[("events.k8s.io", "events")] == {"get", "list"}
    assert rules[("", "namespaces")] == {"get", "list"}  # read-only, and no watch
