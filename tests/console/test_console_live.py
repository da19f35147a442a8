"""The console websocket: session and origin checks, rows appearing, changing and leaving."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from nodus_console.asgi import application
from runtimes.console.live import missed_notice
from runtimes.console.summaries import DESCRIPTION
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from runtimes.storage.models import Project, RevisionCounter
from runtimes.watch import hub
from tests.support.api import runtime_manifest
from tests.support.console import client_for, put_runtime

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(user: Any | None, origin: bytes = b"http://testserver") -> WebsocketCommunicator:
    headers = [(b"host", b"testserver"), (b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(session_cookie)(user)))
    return WebsocketCommunicator(application, "/ws/console", headers=headers)


@pytest.fixture(autouse=True)
def revision_counter(transactional_db: Any) -> None:
    # A transactional test before this one may have flushed the row the migration created.
    RevisionCounter.objects.get_or_create(pk=1)


@pytest.fixture
def fresh_hub() -> Any:
    hub.shutdown()
    yield
    hub.shutdown()


async def watch(socket: WebsocketCommunicator, view: str, query: str, ids: list[str]) -> None:
    revision = await sync_to_async(store.current_revision)()
    await socket.send_to(
        text_data=json.dumps(
            {"type": "watch", "view": view, "query": query, "revision": revision, "ids": ids}
        )
    )


async def test_it_refuses_anonymous_sockets(actors: Any) -> None:
    socket = await connect(None)
    connected, code = await socket.connect()
    assert not connected
    assert code == 4401


async def test_it_refuses_another_sites_origin(actors: Any) -> None:
    socket = await connect(actors["alice"], origin=b"http://evil.example")
    connected, code = await socket.connect()
    assert not connected
    assert code == 4403


async def test_it_pushes_rows_as_they_appear_change_and_go(actors: Any, fresh_hub: Any) -> None:
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "project=demo", ["runtime-rows"])
    await sync_to_async(put_runtime)("demo", runtime_manifest("live-one"))
    added = await socket.receive_from(timeout=5)
    assert 'hx-swap-oob="beforeend:#runtime-rows"' in added
    assert 'id="tr-demo-live-one"' in added
    assert 'id="live-revision"' in added

    def set_ready() -> None:
        def change(obj: dict[str, Any]) -> dict[str, Any]:
            gen = obj["metadata"]["generation"]
            obj["status"] = {**obj["status"], "phase": "Ready", "observedGeneration": gen}
            return obj

        store.mutate(TRAINING_RUNTIMES, "demo", "live-one", change, subresource="status")

    await sync_to_async(set_ready)()
    changed = await socket.receive_from(timeout=5)
    assert '<tr id="tr-demo-live-one" data-live hx-swap-oob="true"' in changed
    assert "phase-ready" in changed

    await sync_to_async(store.delete)(TRAINING_RUNTIMES, "demo", "live-one")
    gone = await socket.receive_from(timeout=5)
    assert '<tr id="tr-demo-live-one" hx-swap-oob="delete">' in gone
    await socket.disconnect()


async def test_it_sends_nothing_from_projects_the_user_cannot_read(
    actors: Any, fresh_hub: Any
) -> None:
    await sync_to_async(Project.objects.create)(name="secret")
    socket = await connect(actors["charlie"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "", ["runtime-rows"])
    await sync_to_async(put_runtime)("secret", runtime_manifest("secret-rt"))
    message = await socket.receive_from(timeout=5)
    assert "secret-rt" not in message  # only the revision marker
    await socket.disconnect()


async def test_it_applies_the_pages_filters(actors: Any, fresh_hub: Any) -> None:
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "task=Evaluate", ["runtime-rows"])
    await sync_to_async(put_runtime)("demo", runtime_manifest("sft-not-shown"))
    message = await socket.receive_from(timeout=5)
    assert "sft-not-shown" not in message
    await socket.disconnect()


async def test_it_resumes_from_the_revision_the_page_last_had(actors: Any, fresh_hub: Any) -> None:
    before = await sync_to_async(store.current_revision)()
    await sync_to_async(put_runtime)("demo", runtime_manifest("while-away"))
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await socket.send_to(
        text_data=json.dumps(
            {
                "type": "watch",
                "view": "catalog",
                "query": "",
                "revision": before,
                "ids": ["runtime-rows"],
            }
        )
    )
    message = await socket.receive_from(timeout=5)
    assert 'id="tr-demo-while-away"' in message
    await socket.disconnect()


async def test_it_redraws_a_runtime_pages_header(actors: Any, fresh_hub: Any) -> None:
    await sync_to_async(put_runtime)("demo", runtime_manifest("page-rt"))
    socket = await connect(actors["bob"])
    assert (await socket.connect())[0]
    await watch(socket, "runtime", "namespace=demo&name=page-rt", ["runtime-header"])

    def relabel() -> None:
        def change(obj: dict[str, Any]) -> dict[str, Any]:
            obj["metadata"]["labels"] = {"app": "changed"}
            return obj

        store.mutate(TRAINING_RUNTIMES, "demo", "page-rt", change)

    await sync_to_async(relabel)()
    message = await socket.receive_from(timeout=5)
    assert (
        '<div id="runtime-header" class="runtime-header" data-live hx-swap-oob="true">' in message
    )
    assert ">Edit<" not in message  # bob views: no edit action, live or not
    await socket.disconnect()


SCRIPT = "<script>alert(1)</script>"


def page_of(user: Any, url: str) -> str:
    return client_for(user).get(url).content.decode()


async def test_it_pushes_the_very_row_the_catalog_page_draws(actors: Any, fresh_hub: Any) -> None:
    manifest = runtime_manifest("same-row")
    manifest["metadata"]["annotations"] = {DESCRIPTION: SCRIPT}
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "project=demo", ["runtime-rows"])
    await sync_to_async(put_runtime)("demo", manifest)
    added = await socket.receive_from(timeout=5)
    wrapper = '<tbody hx-swap-oob="beforeend:#runtime-rows">'
    row = added[added.index(wrapper) + len(wrapper) : added.index("</tbody>")]
    assert row.startswith('<tr id="tr-demo-same-row" data-live ')
    page = await sync_to_async(page_of)(actors["alice"], "/?project=demo")
    assert row in page  # byte for byte: the same partial from the same summary
    assert SCRIPT not in added  # runtime-authored text stays escaped
    assert "&lt;script&gt;" in row
    await socket.disconnect()


async def test_it_pushes_the_very_header_and_status_the_runtime_page_draws(
    actors: Any, fresh_hub: Any
) -> None:
    await sync_to_async(put_runtime)("demo", runtime_manifest("same-page"))
    socket = await connect(actors["bob"])
    assert (await socket.connect())[0]
    await watch(
        socket, "runtime", "namespace=demo&name=same-page", ["runtime-header", "runtime-status"]
    )

    def report() -> None:
        def change(obj: dict[str, Any]) -> dict[str, Any]:
            condition = {
                "type": "Ready",
                "status": "False",
                "reason": "Bad",
                "message": SCRIPT,
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
            obj["status"] = {**obj["status"], "phase": "Failed", "conditions": [condition]}
            return obj

        store.mutate(TRAINING_RUNTIMES, "demo", "same-page", change, subresource="status")

    await sync_to_async(report)()
    message = await socket.receive_from(timeout=5)
    header_at = message.index('<div id="runtime-header"')
    status_at = message.index('<section id="runtime-status"')
    header = message[header_at:status_at].rstrip()
    status = message[status_at : message.index("</section>") + len("</section>")]
    page = await sync_to_async(page_of)(actors["bob"], "/p/demo/runtimes/same-page/status")
    # The pushed fragments are the page's own, with only the out-of-band swap attribute added.
    for pushed in (header, status):
        assert ' hx-swap-oob="true"' in pushed
        assert pushed.replace(' hx-swap-oob="true"', "", 1) in page
    assert SCRIPT not in message
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in status
    await socket.disconnect()


async def test_it_tells_a_runtime_page_its_runtime_was_deleted(actors: Any, fresh_hub: Any) -> None:
    await sync_to_async(put_runtime)("demo", runtime_manifest("going"))
    socket = await connect(actors["bob"])
    assert (await socket.connect())[0]
    await watch(socket, "runtime", "namespace=demo&name=going", ["runtime-header"])
    await sync_to_async(store.delete)(TRAINING_RUNTIMES, "demo", "going")
    message = await socket.receive_from(timeout=5)
    assert message.startswith(
        '<div id="runtime-header" hx-swap-oob="true"><p class="notice bad" role="alert">'
        "This runtime has been deleted.</p></div>"
    )
    assert '<span id="live-revision" data-revision="' in message
    await socket.disconnect()


def test_the_missed_notice_fills_the_pages_notice_region(actors: Any) -> None:
    page = page_of(actors["alice"], "/")
    assert '<div id="live-notice" class="live-notice" role="status"></div>' in page
    assert missed_notice() == (
        '<div id="live-notice" class="live-notice" hx-swap-oob="true" role="alert">'
        'Some live updates were missed. <a href="">Reload</a> to catch up.</div>\n'
    )
