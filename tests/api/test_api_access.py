"""Who may do what, as a matrix: every actor, every verb, in the project demo and the managed
project nodus. alice admins demo, bob views it, charlie is an outsider, root is a platform
admin; everyone signed in reads nodus and only platform admins write there. Status is written by
the controller (tests/security/test_status_permission.py) and platform admins only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Event, Project, RevisionCounter
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

ACTORS = ("alice", "bob", "charlie", None, "root")
READS = ("get", "list", "watch")
WRITES = ("create", "update", "patch", "delete", "deletecollection", "status")
VERBS = READS + WRITES

# The allowed (actor, project) pairs per kind of verb; anything else is 403 (401 anonymous).
MAY_READ = {("alice", "demo"), ("bob", "demo"), ("root", "demo")} | {
    (who, "nodus") for who in ("alice", "bob", "charlie", "root")
}
MAY_WRITE = {("alice", "demo"), ("root", "demo"), ("root", "nodus")}
# Status is the controller's: project admins and editors may not write it, platform admins may.
MAY_WRITE_STATUS = {("root", "demo"), ("root", "nodus")}

# The verb as RBAC (and so the Forbidden message) names it, and the resource it names.
RBAC = {
    "status": ("patch", "trainingruntimes/status"),
    "deletecollection": ("deletecollection", "trainingruntimes"),
}


@pytest.fixture
def targets(actors: dict[str, Any]) -> None:
    """One runtime in each project, created by the platform admin through the store."""
    rt = lookup("trainingruntimes")
    assert rt is not None
    # A transactional test before this one may have flushed what the migrations seeded.
    RevisionCounter.objects.get_or_create(pk=1)
    Project.objects.get_or_create(name="nodus")
    for project in ("demo", "nodus"):
        store.create(rt, project, runtime_manifest("target"))


def send(client: ApiClient, verb: str, project: str) -> Any:
    collection = f"{GV}/namespaces/{project}/trainingruntimes"
    item = f"{collection}/target"
    if verb == "get":
        return client.get(item)
    if verb == "list":
        return client.get(collection)
    if verb == "watch":
        # The shared client reads .content, which a streaming (allowed) watch does not have.
        response: Any = client.client.get(
            f"{collection}?watch=true&timeoutSeconds=1", headers=client.headers
        )
        response.json_body = None if response.streaming else orjson.loads(response.content)
        return response
    if verb == "create":
        return client.post(collection, runtime_manifest("fresh"))
    if verb == "update":
        current = store.get(lookup("trainingruntimes"), project, "target")  # type: ignore[arg-type]
        current["metadata"]["labels"]["tier"] = "gold"
        return client.put(item, current)
    if verb == "patch":
        return client.patch(item, {"metadata": {"labels": {"tier": "gold"}}})
    if verb == "delete":
        return client.delete(item)
    if verb == "deletecollection":
        return client.delete(f"{collection}?labelSelector=app%3Dtrainer")
    if verb == "status":
        return client.patch(f"{item}/status", {"status": {"phase": "Ready"}})
    raise AssertionError(verb)


@pytest.mark.parametrize("project", ["demo", "nodus"])
@pytest.mark.parametrize("verb", [v for v in VERBS if v != "watch"])
@pytest.mark.parametrize("who", ACTORS, ids=lambda who: who or "anonymous")
def test_it_allows_exactly_what_each_role_may_do(
    api: Callable[[str | None], ApiClient],
    targets: None,
    who: str | None,
    verb: str,
    project: str,
) -> None:
    check(api, who, verb, project)


# The watch view is async: its queries run on another thread, which needs real commits.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("project", ["demo", "nodus"])
@pytest.mark.parametrize("who", ACTORS, ids=lambda who: who or "anonymous")
def test_it_allows_watching_exactly_to_readers(
    api: Callable[[str | None], ApiClient], targets: None, who: str | None, project: str
) -> None:
    check(api, who, "watch", project)


def check(api: Callable[[str | None], ApiClient], who: str | None, verb: str, project: str) -> None:
    allowed = MAY_READ if verb in READS else MAY_WRITE_STATUS if verb == "status" else MAY_WRITE
    before = (store.current_revision(), Event.objects.count())
    response = send(api(who), verb, project)
    if who is not None and (who, project) in allowed:
        assert response.status_code in {200, 201}, response.json_body
        return
    expected = 401 if who is None else 403
    assert response.status_code == expected, response.json_body
    body = response.json_body
    assert body["kind"] == "Status"
    assert body["code"] == expected
    if who is None:
        assert body["reason"] == "Unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")
    else:
        rbac_verb, resource = RBAC.get(verb, (verb, "trainingruntimes"))
        named = ' "target"' if verb in {"get", "update", "patch", "delete", "status"} else ""
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            f'trainingruntimes.nodus.dev{named} is forbidden: User "{who}" cannot {rbac_verb} '
            f'resource "{resource}" in API group "nodus.dev" in the namespace "{project}"'
        )
        assert body["details"]["group"] == "nodus.dev"
        assert body["details"]["kind"] == "trainingruntimes"
    # A refused request changes nothing.
    assert (store.current_revision(), Event.objects.count()) == before


def test_it_lists_across_projects_only_what_each_actor_may_read(
    api: Callable[[str | None], ApiClient], targets: None
) -> None:
    def projects(who: str) -> set[str]:
        response = api(who).get(f"{GV}/trainingruntimes")
        assert response.status_code == 200
        return {o["metadata"]["namespace"] for o in response.json_body["items"]}

    assert projects("root") == {"demo", "nodus"}
    assert projects("alice") == {"demo", "nodus"}
    assert projects("bob") == {"demo", "nodus"}
    assert projects("charlie") == {"nodus"}
    assert api(None).get(f"{GV}/trainingruntimes").status_code == 401


def test_it_refuses_a_revoked_or_unknown_token(
    api: Callable[[str | None], ApiClient], actors: dict[str, Any]
) -> None:
    from runtimes.accounts.tokens import revoke
    from runtimes.storage.models import ApiToken

    alice = api("alice")
    assert alice.get(f"{GV}/namespaces/demo/trainingruntimes").status_code == 200
    for row in ApiToken.objects.filter(user=actors["alice"]):
        revoke(row)
    assert alice.get(f"{GV}/namespaces/demo/trainingruntimes").status_code == 401
    stranger = ApiClient("nodus_not-a-token")
    response = stranger.get(f"{GV}/namespaces/demo/trainingruntimes")
    assert response.status_code == 401
    assert response.json_body["reason"] == "Unauthorized"


def test_it_lets_everyone_signed_in_read_the_accelerator_catalog_and_nobody_write_it(
    api: Callable[[str | None], ApiClient], actors: dict[str, Any]
) -> None:
    from runtimes.registry import seeding

    seeding.seed_accelerators()
    for who in ("alice", "charlie", "root"):
        listed = api(who).get(f"{GV}/accelerators")
        assert listed.status_code == 200
        assert listed.json_body["items"]
    name = listed.json_body["items"][0]["metadata"]["name"]
    refused = api("root").patch(f"{GV}/accelerators/{name}", {"metadata": {"labels": {"a": "b"}}})
    assert refused.status_code == 405
    assert refused.json_body["reason"] == "MethodNotAllowed"
    assert api(None).get(f"{GV}/accelerators").status_code == 401
