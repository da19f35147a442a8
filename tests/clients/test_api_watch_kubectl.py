"""List and watch as real kubectl uses them: --chunk-size paging, `get -w` (Table watches,
swallowed synthetic ADDED, selector transitions) and `wait` over watch-list."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.kubectl import Kubectl
from tests.support.liveserver import LiveServer
from tests.support.watch_live import DEMO, manifest

pytestmark = pytest.mark.kubectl


@pytest.fixture
def kubectl(daphne_server: LiveServer, tmp_path: Path) -> Kubectl:
    return Kubectl(
        daphne_server.https_url, daphne_server.tokens["alice"], daphne_server.ca_pem, tmp_path
    )


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture
def create(daphne_server: LiveServer) -> Iterator[Callable[..., None]]:
    with daphne_server.client("alice") as client:

        def make(name: str, tag: str, **labels: str) -> None:
            client.post(DEMO, json=manifest(name, {"t": tag, **labels})).raise_for_status()

        yield make


def finish(process: subprocess.Popen[str], after: float = 3.0) -> str:
    """Lets a blocking kubectl run a little longer, then stops it and returns its output."""
    try:
        out, _err = process.communicate(timeout=after)
    except subprocess.TimeoutExpired:
        process.terminate()
        out, _err = process.communicate(timeout=10)
    return out


def test_it_lists_in_chunks_of_one(kubectl: Kubectl, create: Callable[..., None], tag: str) -> None:
    names = [f"chunk-{i}-{tag}" for i in range(3)]
    for name in names:
        create(name, tag)
    result = kubectl("get", "tr", "-l", f"t={tag}", "--chunk-size=1", "-o", "name", "-v=6")
    assert result.ok, str(result)
    assert result.stdout.split() == [f"trainingruntime.nodus.dev/{n}" for n in names]
    assert result.stderr.count("continue=") >= 2  # it really paged


def test_it_watches_one_runtime_by_name(
    kubectl: Kubectl,
    create: Callable[..., None],
    tag: str,
    daphne_server: LiveServer,
) -> None:
    name = f"named-{tag}"
    create(name, tag)
    watching = kubectl.start("get", "tr", name, "-w", "--output-watch-events", "--no-headers")
    time.sleep(2)
    with daphne_server.client("alice") as client:
        client.patch(
            f"{DEMO}/{name}",
            content=b'{"metadata":{"annotations":{"a":"b"}}}',
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
    lines = [line.split() for line in finish(watching).splitlines() if line.strip()]
    # The first line is the GET; kubectl swallows the watch's synthetic ADDED; then MODIFIED.
    assert [line[0] for line in lines] == ["ADDED", "MODIFIED"]
    assert {line[1] for line in lines} == {name}


def test_it_shows_runtimes_leaving_and_entering_a_selection(
    kubectl: Kubectl,
    create: Callable[..., None],
    tag: str,
    daphne_server: LiveServer,
) -> None:
    name = f"sel-{tag}"
    create(name, tag, tier="gold")
    watching = kubectl.start(
        "get", "tr", "-l", f"t={tag},tier=gold", "-w", "--output-watch-events", "--no-headers"
    )
    time.sleep(2)
    with daphne_server.client("alice") as client:
        for tier in ("silver", "gold"):
            client.patch(
                f"{DEMO}/{name}",
                content=f'{{"metadata":{{"labels":{{"tier":"{tier}"}}}}}}'.encode(),
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()
            time.sleep(0.5)
    events = [line.split()[0] for line in finish(watching).splitlines() if line.strip()]
    assert events == ["ADDED", "DELETED", "ADDED"]


def test_it_waits_for_a_condition_that_already_holds(
    kubectl: Kubectl, create: Callable[..., None], tag: str
) -> None:
    name = f"wait-{tag}"
    create(name, tag)
    started = time.monotonic()
    result = kubectl(
        "wait", f"tr/{name}", "--for=jsonpath={.metadata.name}=" + name, "--timeout=15s"
    )
    assert result.ok, str(result)
    assert "condition met" in result.stdout
    assert time.monotonic() - started < 10  # answered by the initial events, not the timeout


def test_it_waits_for_a_deletion(
    kubectl: Kubectl,
    create: Callable[..., None],
    tag: str,
    daphne_server: LiveServer,
) -> None:
    name = f"gone-{tag}"
    create(name, tag)
    waiting = kubectl.start("wait", f"tr/{name}", "--for=delete", "--timeout=20s")
    time.sleep(2)
    with daphne_server.client("alice") as client:
        client.delete(f"{DEMO}/{name}").raise_for_status()
    out = finish(waiting, after=15)
    assert waiting.returncode == 0, out
    assert "condition met" in out
