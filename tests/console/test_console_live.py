"""The console websocket: session and origin checks; the catalog's results redrawn (count, facets,
order) as runtimes change; runtime pages told of changes and deletion; resume, 410 and the 404
of a deleted runtime's page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from runtimes.console.live import missed_notice
from runtimes.console.summaries import DESCRIPTION
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import compaction, store
from runtimes.storage.models import Project
from tests.support import audit
from tests.support.api import runtime_manifest
from tests.support.console import client_for, connect, put_runtime, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("revision_counter"),
]


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


async def test_it_refuses_another_sites_origin(actors: Any, settings: Any, tmp_path: Any) -> None:
    log = await sync_to_async(audit.fresh_log)(settings, tmp_path)
    socket = await connect(actors["alice"], origin=b"http://evil.example")
    connected, code = await socket.connect()
    assert not connected
    assert code == 4403
    (event,) = await sync_to_async(audit.events)(log)
    assert (event["verb"], event["responseStatus"]["code"]) == ("connect", 403)
    assert event["user"]["username"] == "alice"


def results_of(message: str) -> str:
    """The catalog's `results` block in a push (what comes before the notice and the marker)."""
    start = message.index('<div id="results"')
    ends = [message.find(t, start) for t in ('<div id="live-notice"', '<span id="live-revision"')]
    return message[start : min(e for e in ends if e >= 0)].strip()


def facet_count(results: str, facet: str, value: str) -> int:
    found = re.search(
        rf'name="{facet}" value="{value}"[^>]*>\s*<span class="facet-name">{value}</span> '
        r'<span class="count">(\d+)</span>',
        results,
    )
    return int(found.group(1)) if found else 0


def set_phase(name: str, phase: str) -> None:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        gen = obj["metadata"]["generation"]
        obj["status"] = {**obj["status"], "phase": phase, "observedGeneration": gen}
        return obj

    store.mutate(TRAINING_RUNTIMES, "demo", name, change, subresource="status")


async def test_it_redraws_count_facets_and_order_as_runtimes_come_change_and_go(
    actors: Any, fresh_hub: Any
) -> None:
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "project=demo&sort=name", [])
    await sync_to_async(put_runtime)("demo", runtime_manifest("b-middle"))
    first = results_of(await receive_until(socket, lambda m: "tr-demo-b-middle" in m))
    assert first.startswith('<div id="results" class="results" hx-swap-oob="true">')
    assert "1 of 1 runtime<" in first

    # A new row lands where the page's sort puts it, not at the bottom; count and facets follow.
    await sync_to_async(put_runtime)("demo", runtime_manifest("a-first"))
    both = results_of(await receive_until(socket, lambda m: "tr-demo-a-first" in m))
    assert both.index('id="tr-demo-a-first"') < both.index('id="tr-demo-b-middle"')
    assert "2 of 2 runtimes" in both
    assert facet_count(both, "phase", "Pending") == 2

    await sync_to_async(set_phase)("a-first", "Ready")
    ready = results_of(await receive_until(socket, lambda m: "phase-ready" in m))
    assert (facet_count(ready, "phase", "Pending"), facet_count(ready, "phase", "Ready")) == (1, 1)

    await sync_to_async(store.delete)(TRAINING_RUNTIMES, "demo", "b-middle")
    gone = results_of(await receive_until(socket, lambda m: "tr-demo-b-middle" not in m))
    assert "1 of 1 runtime<" in gone
    assert 'id="tr-demo-a-first"' in gone
    await socket.disconnect()


async def test_it_drops_a_row_that_stops_matching_the_filters(actors: Any, fresh_hub: Any) -> None:
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "project=demo&phase=Pending", [])
    await sync_to_async(put_runtime)("demo", runtime_manifest("soon-ready"))
    await receive_until(socket, lambda m: "tr-demo-soon-ready" in m)
    await sync_to_async(set_phase)("soon-ready", "Ready")
    message = await receive_until(socket, lambda m: "tr-demo-soon-ready" not in m)
    assert "0 of 1 runtime<" in results_of(message)
    await socket.disconnect()


async def test_it_redraws_a_batch_of_changes_in_one_push(actors: Any, fresh_hub: Any) -> None:
    before = await sync_to_async(store.current_revision)()
    for i in range(12):
        await sync_to_async(put_runtime)("demo", runtime_manifest(f"burst-{i:02}"))
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await socket.send_to(
        text_data=json.dumps(
            {"type": "watch", "view": "catalog", "query": "project=demo", "revision": before}
        )
    )
    message = await socket.receive_from(timeout=5)
    assert all(f'id="tr-demo-burst-{i:02}"' in message for i in range(12))
    assert "12 of 12 runtimes" in message
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_it_sends_nothing_from_projects_the_user_cannot_read(
    actors: Any, fresh_hub: Any
) -> None:
    await sync_to_async(Project.objects.create)(name="secret")
    socket = await connect(actors["charlie"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "", ["runtime-rows"])
    await sync_to_async(put_runtime)("secret", runtime_manifest("secret-rt"))
    # Not even a revision marker: its timing would tell when the project is written.
    assert await socket.receive_nothing(timeout=1.5)
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


async def test_it_pushes_the_very_results_block_the_catalog_page_draws(
    actors: Any, fresh_hub: Any
) -> None:
    manifest = runtime_manifest("same-row")
    manifest["metadata"]["annotations"] = {DESCRIPTION: SCRIPT}
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "catalog", "project=demo", [])
    await sync_to_async(put_runtime)("demo", manifest)
    pushed = results_of(await socket.receive_from(timeout=5))
    page = await sync_to_async(page_of)(actors["alice"], "/?project=demo")
    # byte for byte: the same partial from the same context, with only the out-of-band swap
    assert pushed.replace(' hx-swap-oob="true"', "", 1) in page
    assert 'id="tr-demo-same-row"' in pushed
    assert SCRIPT not in pushed  # runtime-authored text stays escaped
    assert "&lt;script&gt;" in pushed
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
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await watch(socket, "runtime", "namespace=demo&name=going&tab=parameters", ["runtime-header"])
    await sync_to_async(store.delete)(TRAINING_RUNTIMES, "demo", "going")
    message = await socket.receive_from(timeout=5)
    header = message[: message.index("</div>", message.index('class="notice bad"'))]
    assert header.startswith(
        '<div id="runtime-header" class="runtime-header" data-deleted hx-swap-oob="true">'
    )
    assert re.search(r'This runtime was deleted at <time datetime="[^"]+">', header)
    assert ">Edit<" not in message  # alice could edit and delete it, before
    assert ">Delete<" not in message
    tabs = message[message.index('<nav id="runtime-tabs"') : message.index("</nav>")]
    assert 'hx-swap-oob="true"' in tabs
    assert "<a " not in tabs  # every tab needs the runtime: none is a link any more
    assert '<span class="tab-off" aria-disabled="true" aria-current="page">Parameters' in tabs
    assert '<span id="live-revision" data-revision="' in message
    await socket.disconnect()


def test_a_deleted_runtimes_page_answers_404_saying_when(actors: Any) -> None:
    put_runtime("demo", runtime_manifest("was-here"))
    store.delete(TRAINING_RUNTIMES, "demo", "was-here")
    for tab in ("overview", "parameters", "yaml"):
        response = client_for(actors["bob"]).get(f"/p/demo/runtimes/was-here/{tab}")
        assert response.status_code == 404
        page = response.content.decode()
        assert "Runtime demo/was-here was deleted" in page
        assert re.search(r'This runtime was deleted at <time datetime="[^"]+">', page)
        assert 'href="/?project=demo"' in page
    # Someone who may not read the project learns nothing about it.
    hidden = client_for(actors["charlie"]).get("/p/demo/runtimes/was-here/overview")
    assert hidden.status_code == 404
    assert "was-here" not in hidden.content.decode().replace("/p/demo/runtimes/was-here", "")
    assert "deleted at" not in hidden.content.decode()


def test_a_runtime_that_never_was_answers_404_naming_what_was_asked(actors: Any) -> None:
    response = client_for(actors["alice"]).get("/p/demo/runtimes/never-was/overview")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Runtime demo/never-was not found" in page
    assert "deleted at" not in page
    assert 'href="/publish"' in page  # alice may publish in demo


async def test_each_push_names_the_watch_it_answers(actors: Any, fresh_hub: Any) -> None:
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    revision = await sync_to_async(store.current_revision)()
    await socket.send_to(
        text_data=json.dumps(
            {"type": "watch", "view": "catalog", "query": "", "revision": revision, "key": 7}
        )
    )
    await sync_to_async(put_runtime)("demo", runtime_manifest("keyed"))
    message = await socket.receive_from(timeout=5)
    assert message.endswith('data-watch="7" hidden hx-swap-oob="true"></span>\n')
    await socket.disconnect()


async def test_it_redraws_the_catalog_when_its_resume_point_was_compacted(
    actors: Any, fresh_hub: Any
) -> None:
    before = await sync_to_async(store.current_revision)()
    for name in ("old-one", "old-two", "old-three"):
        await sync_to_async(put_runtime)("demo", runtime_manifest(name))
    await sync_to_async(compaction.compact)(1)
    socket = await connect(actors["alice"])
    assert (await socket.connect())[0]
    await socket.send_to(
        text_data=json.dumps(
            {"type": "watch", "view": "catalog", "query": "project=demo", "revision": before}
        )
    )
    message = await socket.receive_from(timeout=5)
    assert "3 of 3 runtimes" in results_of(message)
    assert "redrawn from the current state" in message
    current = await sync_to_async(store.current_revision)()
    assert f'<span id="live-revision" data-revision="{current}"' in message
    # ... and it follows on from there.
    await sync_to_async(put_runtime)("demo", runtime_manifest("after-redraw"))
    after = await receive_until(socket, lambda m: "tr-demo-after-redraw" in m)
    assert "4 of 4 runtimes" in after
    await socket.disconnect()


async def test_a_runtime_page_away_too_long_learns_its_runtime_went(
    actors: Any, fresh_hub: Any
) -> None:
    created = await sync_to_async(put_runtime)("demo", runtime_manifest("went-away"))
    await sync_to_async(store.delete)(TRAINING_RUNTIMES, "demo", "went-away")
    await sync_to_async(put_runtime)("demo", runtime_manifest("unrelated"))
    await sync_to_async(compaction.compact)(1)
    socket = await connect(actors["bob"])
    assert (await socket.connect())[0]
    await socket.send_to(
        text_data=json.dumps(
            {
                "type": "watch",
                "view": "runtime",
                "query": "namespace=demo&name=went-away&tab=overview",
                "revision": int(created["metadata"]["resourceVersion"]),
                "ids": ["runtime-header"],
            }
        )
    )
    message = await socket.receive_from(timeout=5)
    assert "This runtime was deleted" in message
    assert "redrawn from the current state" in message
    await socket.disconnect()


def test_the_missed_notice_fills_the_pages_notice_region(actors: Any) -> None:
    page = page_of(actors["alice"], "/")
    assert '<div id="live-notice" class="live-notice" role="status"></div>' in page
    assert missed_notice() == (
        '<div id="live-notice" class="live-notice" hx-swap-oob="true" role="alert">'
        'Some live updates were missed. <a href="">Reload</a> to catch up.</div>\n'
    )
