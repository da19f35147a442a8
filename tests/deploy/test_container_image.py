"""The image the Containerfile builds, built with Debian's podman and run as a pod would run it:
non-root, a read-only root, its data on a volume; set up once, then serving /livez, /readyz and
the API."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.containers import RUN_FLAGS, build_image, podman, require_podman
from tests.support.ports import free_port

pytestmark = pytest.mark.container

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    require_podman()
    tag = f"localhost/nodus-console:test-{uuid.uuid4().hex[:8]}"
    build_image(ROOT, tag)
    yield tag
    podman("rmi", "-f", tag, check=False)


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"nodus-test-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "-f", name, check=False)


def wait_for(url: str, timeout: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = httpx.get(url, timeout=5)
            if answer.status_code == 200:
                return answer
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer 200 in {timeout} s"
        time.sleep(0.5)


def test_the_image_sets_up_then_serves_as_a_non_root_read_only_pod(image: str, volume: str) -> None:
    setup = podman("run", "--rm", *RUN_FLAGS, "-v", f"{volume}:/data", image,
                   "python", "manage.py", "serve", "--setup-only")  # fmt: skip
    assert "is set up" in setup
    port = free_port()
    name = f"nodus-serve-{uuid.uuid4().hex[:8]}"
    podman("run", "-d", "--name", name, *RUN_FLAGS, "--read-only", "--tmpfs", "/tmp",
           "-v", f"{volume}:/data", "-p", f"127.0.0.1:{port}:8000", image)  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        assert wait_for(f"{base}/livez").text.strip() == "ok"
        ready = wait_for(f"{base}/readyz?verbose")
        assert "[+]database ok" in ready.text
        refused = httpx.get(f"{base}/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes")
        assert refused.status_code == 401
        assert refused.json()["reason"] == "Unauthorized"
        assert podman("exec", name, "id", "-u").strip() == "10001"
        written = podman("exec", name, "sh", "-c", "touch /app/x 2>&1 || echo refused")
        assert "refused" in written or "Read-only" in written
    finally:
        podman("rm", "-f", name, check=False)
