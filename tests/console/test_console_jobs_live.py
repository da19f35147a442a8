"""The Jobs page over the console websocket: its `results` block (count and rows) redrawn from the
store for the page's own filters and sort as the project's jobs come, change phase and go, with
the Runtime filter's options; one push for a burst; a redraw, said so, after the resume point was
compacted; nothing, not even a revision, for a project the user may not read, as for a
missing one."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from runtimes.registry.kinds import TRAINING_JOBS
from runtimes.storage import compaction, store
from tests.support.console import add_job, client_for, connect, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("revision_counter"),
]
SCRIPT = "<script>alert(1)</script>"


def set_phase(name: str, phase: str, **compiled: Any) -> None:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        status = {**(obj.get("status") or {}), "phase": phase, "observedGeneration": 1}
        if compiled:
            status["compiled"] = compiled
        obj["status"] = status
        return obj

    store.mutate(TRAINING_JOBS, "demo", name, change, subresource="status")


def page_query(user: Any, filters: str) -> str:
    """The watch query the Jobs page itself asks for, as its browser would send it."""
    page = client_for(user).get(f"/p/demo/jobs?{filters}").content.decode()
    found = re.search(r'data-view="jobs" data-query="([^"]*)"', page)
    assert found, page[:2000]
    return found.group(1).replace("&amp;", "&")


async def watch_jobs(socket: WebsocketCommunicator, user: Any, filters: str, since: int) -> None:
    query = await sync_to_async(page_query)(user, filters)
    message = {"type": "watch", "view": "jobs", "query": query, "revision": since, "ids": []}
    await socket.send_to(text_data=json.dumps(message))


def results_of(message: str) -> str:
    """The Jobs page's `results` block in a push (before the notice and the marker)."""
    start = message.index('<div id="results"')
    ends = [message.find(t, start) for t in ('<div id="live-notice"', '<span id="live-revision"')]
    return message[start : min(e for e in ends if e >= 0)].strip()


def undated(html: str) -> str:
    """`html` without its ages ("3s", "2m"): the page and a push drawn a moment apart differ
    only there (the absolute time in each `title` stays)."""
    return re.sub(r"(<time [^>]*>)\d+[smhd](</time>)", r"\1AGE\2", html)


def count_of(message: str) -> str:
    found = re.search(r'<p class="summary" id="result-count">([^<]*)</p>', results_of(message))
    assert found, message
    return found.group(1)


async def now() -> int:
    return int(await sync_to_async(store.current_revision)())


async def test_a_filtered_jobs_page_redraws_its_count_and_rows_as_jobs_come_and_change_phase(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    socket = await connect(catalog_data["bob"])  # a viewer of demo
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["bob"], "phase=Compiled", await now())

    # A job that does not match the page's filter: not listed, but the total counts it.
    await sync_to_async(add_job)(api, "first-run")
    pending = await receive_until(socket, lambda m: 'id="results"' in m)
    assert 'id="job-demo-first-run"' not in pending
    assert count_of(pending) == "0 of 1 job"

    # Compiled: it now matches, and lands in the list; the block is the page's own, byte for byte.
    await sync_to_async(set_phase)("first-run", "Compiled")
    compiled = await receive_until(socket, lambda m: 'id="job-demo-first-run"' in m)
    assert count_of(compiled) == "1 of 1 job"
    pushed = results_of(compiled)
    assert pushed.startswith('<div id="results" class="job-results" hx-swap-oob="true">')
    page = await sync_to_async(
        lambda: client_for(catalog_data["bob"]).get("/p/demo/jobs?phase=Compiled").content.decode()
    )()
    assert undated(pushed.replace(' hx-swap-oob="true"', "", 1)) in undated(page)

    # Rows come in the page's order (by name), not appended at the bottom.
    await sync_to_async(add_job)(api, "another-run")
    await sync_to_async(set_phase)("another-run", "Compiled")
    both = results_of(await receive_until(socket, lambda m: 'id="job-demo-another-run"' in m))
    assert both.index('id="job-demo-another-run"') < both.index('id="job-demo-first-run"')
    assert "2 of 2 jobs" in both

    await sync_to_async(store.delete)(TRAINING_JOBS, "demo", "first-run")
    gone = await receive_until(socket, lambda m: 'id="job-demo-first-run"' not in m)
    assert count_of(gone) == "1 of 1 job"
    await socket.disconnect()


async def test_a_job_leaves_a_pending_filter_once_compiled(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    await sync_to_async(add_job)(api, "soon-compiled")
    socket = await connect(catalog_data["alice"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["alice"], "phase=Pending", await now())
    await sync_to_async(set_phase)("soon-compiled", "Compiled")
    message = await receive_until(socket, lambda m: 'id="results"' in m)
    assert 'id="job-demo-soon-compiled"' not in message
    assert count_of(message) == "0 of 1 job"
    await socket.disconnect()


async def test_a_burst_of_jobs_is_one_redraw(catalog_data: Any, api: Any, fresh_hub: Any) -> None:
    before = await now()
    for i in range(6):
        await sync_to_async(add_job)(api, f"burst-{i}")
    socket = await connect(catalog_data["alice"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["alice"], "q=burst", before)
    message = await socket.receive_from(timeout=5)
    assert all(f'id="job-demo-burst-{i}"' in message for i in range(6))
    assert count_of(message) == "6 of 6 jobs"
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_a_jobs_page_whose_resume_point_was_compacted_is_redrawn_and_told(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    before = await now()
    for name in ("old-one", "old-two"):
        await sync_to_async(add_job)(api, name)
    await sync_to_async(compaction.compact)(1)
    socket = await connect(catalog_data["bob"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["bob"], "", before)
    message = await socket.receive_from(timeout=5)
    assert count_of(message) == "2 of 2 jobs"
    assert "redrawn from the current state" in message
    assert "Reload" not in message
    assert f'<span id="live-revision" data-revision="{await now()}"' in message
    # ... and it follows on from there.
    await sync_to_async(add_job)(api, "after-redraw")
    after = await receive_until(socket, lambda m: 'id="job-demo-after-redraw"' in m)
    assert count_of(after) == "3 of 3 jobs"
    await socket.disconnect()


async def test_job_authored_text_stays_escaped(catalog_data: Any, api: Any, fresh_hub: Any) -> None:
    await sync_to_async(add_job)(api, "hostile")
    socket = await connect(catalog_data["alice"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["alice"], "", await now())
    await sync_to_async(set_phase)("hostile", "Compiled", accelerator=SCRIPT)
    message = await receive_until(socket, lambda m: "phase-compiled" in m)
    assert SCRIPT not in message
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message
    await socket.disconnect()


async def test_nothing_of_a_project_the_user_may_not_read_as_of_a_missing_one(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    """Not a row, not a count, not even a revision marker: a push's timing alone would tell the
    project exists and when it is written, which its pages hide behind the same 404."""
    before = await now()
    sockets = {}
    for project in ("demo", "no-such-project"):
        socket = await connect(catalog_data["charlie"])  # reads nodus, not demo
        assert (await socket.connect())[0]
        query = {"type": "watch", "view": "jobs", "query": f"namespace={project}", "ids": []}
        await socket.send_to(text_data=json.dumps({**query, "revision": before}))
        sockets[project] = (socket, query)
    await sync_to_async(add_job)(api, "private-run")
    await sync_to_async(set_phase)("private-run", "Compiled")
    # A page asking to be redrawn after a compaction gets nothing either.
    await sync_to_async(add_job)(api, "private-two")
    await sync_to_async(compaction.compact)(1)
    for socket, query in sockets.values():
        await socket.send_to(text_data=json.dumps({**query, "revision": before, "key": 2}))
    # A second namespace in the query does not choose another project.
    demo, query = sockets["demo"]
    other = {**query, "query": "namespace=nodus&namespace=demo", "revision": await now()}
    await demo.send_to(text_data=json.dumps({**other, "key": 3}))
    await sync_to_async(set_phase)("private-two", "Compiled")
    for socket, _query in sockets.values():
        assert await socket.receive_nothing(timeout=1.5)  # neither a push nor a close
        await socket.disconnect()


def runtime_menu_of(message: str) -> str:
    """The Runtime filter's options a push redraws (the select swapped in place)."""
    found = re.search(r'<select id="job-runtime" hx-swap-oob="innerHTML">(.*?)</select>', message)
    assert found, message
    return found.group(1)


async def test_a_sorted_jobs_page_gets_new_jobs_in_its_own_order(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    socket = await connect(catalog_data["bob"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["bob"], "sort=-name", await now())
    for name in ("middle-run", "alpha-run", "zulu-run"):
        await sync_to_async(add_job)(api, name)
    message = await receive_until(socket, lambda m: 'id="job-demo-zulu-run"' in m)
    pushed = results_of(message)
    rows = re.findall(r'<tr id="job-demo-([^"]+)"', pushed)
    assert rows == sorted(rows, reverse=True)
    assert set(rows) >= {"middle-run", "alpha-run", "zulu-run"}
    # The block is the page's own at that order, byte for byte (headers and aria-sort with it).
    page = await sync_to_async(
        lambda: client_for(catalog_data["bob"]).get("/p/demo/jobs?sort=-name").content.decode()
    )()
    assert undated(pushed.replace(' hx-swap-oob="true"', "", 1)) in undated(page)
    assert 'aria-sort="descending"' in pushed
    await socket.disconnect()


async def test_the_runtime_menu_learns_a_runtime_a_new_job_names(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    await sync_to_async(add_job)(api, "on-qwen")  # names sft-qwen3
    socket = await connect(catalog_data["bob"])
    assert (await socket.connect())[0]
    # The page filters by sft-qwen3: the runtime a new job names is offered, the choice kept.
    await watch_jobs(socket, catalog_data["bob"], "runtime=sft-qwen3", await now())
    page = await sync_to_async(
        lambda: client_for(catalog_data["bob"]).get("/p/demo/jobs").content.decode()
    )()
    assert 'value="sft-demo"' not in page
    await sync_to_async(add_job)(api, "on-demo", runtimeRef={"name": "sft-demo"})
    message = await receive_until(socket, lambda m: 'id="job-runtime"' in m)
    menu = runtime_menu_of(message)
    assert '<option value="sft-demo">sft-demo</option>' in menu
    assert '<option value="sft-qwen3" selected>sft-qwen3</option>' in menu
    assert '<option value="">any</option>' in menu
    assert 'id="job-demo-on-demo"' not in results_of(message)  # filtered out, yet offered
    # The pushed options are the ones the page itself draws now.
    page = await sync_to_async(
        lambda: (
            client_for(catalog_data["bob"]).get("/p/demo/jobs?runtime=sft-qwen3").content.decode()
        )
    )()
    assert f'<select id="job-runtime" name="runtime">{menu}</select>' in page
    await socket.disconnect()


async def test_the_runtime_menu_keeps_a_chosen_runtime_escaped(
    catalog_data: Any, api: Any, fresh_hub: Any
) -> None:
    chosen = f'"><b>{SCRIPT}'
    socket = await connect(catalog_data["alice"])
    assert (await socket.connect())[0]
    await watch_jobs(socket, catalog_data["alice"], urlencode({"runtime": chosen}), await now())
    await sync_to_async(add_job)(api, "any-run")
    menu = runtime_menu_of(await receive_until(socket, lambda m: 'id="job-runtime"' in m))
    assert SCRIPT not in menu
    assert "<b>" not in menu
    assert f'<option value="{escape(chosen)}" selected>{escape(chosen)}</option>' in menu
    await socket.disconnect()
