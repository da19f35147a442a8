"""The controller's test world: a trusted key pair, an image layout, runtimes in the store.

``make_world`` gives a ``World`` whose ``config`` and ``reconciler`` are what a controller gets
for it; ``publish`` builds (and signs) an image into a layout or registry; the rest create
runtimes and read back what the controller wrote.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from runtimes.controller.loop import Controller
from runtimes.controller.oci.auth import Credential
from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.reconcile import Reconciler, runtime_type
from runtimes.controller.settings import ControllerSettings, TrustedKeys
from runtimes.controller.signing.cosign import KeyPair, generate_key_pair, sign
from runtimes.storage import store
from runtimes.storage.models import Project, RevisionCounter
from tests.support.api import runtime_manifest

LAYOUT_REGISTRY = "registry.nodus.dev"


@dataclass
class World:
    """A trusted key pair, an image layout and the settings a controller gets for them."""

    root: Path
    key: KeyPair
    layout: LayoutStore
    allowed: set[str] = field(default_factory=set)
    credentials: dict[str, Credential] = field(default_factory=dict)
    times: Iterator[str] = field(
        default_factory=lambda: (
            f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z" for n in itertools.count()
        )
    )

    @property
    def config(self) -> ControllerSettings:
        return ControllerSettings(
            registry=RegistrySettings(
                allowed_registries=frozenset(self.allowed),
                credentials=dict(self.credentials),
                timeout=2.0,
            ),
            layout_root=self.layout.root,
            trusted_key_paths=(self.root / "cosign.pub",),
            resync_seconds=300,
            poll_seconds=0.2,
            backoff_base=0.2,
            backoff_max=1.0,
            lock_path=self.root / "controller.lock",
        )

    def reconciler(self) -> Reconciler:
        config = self.config
        sources = ImageSources(config.layout_root, config.registry)
        # A clock that ticks once per reading: a rewritten timestamp cannot go unnoticed.
        return Reconciler(
            sources, TrustedKeys(config.trusted_key_paths).current, clock=lambda: next(self.times)
        )

    def client(self) -> RegistryClient:
        return RegistryClient(self.config.registry)


def make_world(root: Path) -> World:
    key = generate_key_pair()
    (root / "cosign.pub").write_bytes(key.public_pem)
    # A transactional test's flush empties the migration-made counter row: put it back.
    RevisionCounter.objects.get_or_create(pk=1)
    for name in ("nodus", "demo"):
        Project.objects.get_or_create(name=name)
    return World(root=root, key=key, layout=LayoutStore(root / "layout"))


def publish(
    source: Any, ref: str, *, user: str | None = "trainer", key: KeyPair | None = None
) -> str:
    """Builds ``ref`` into ``source``, signs it with ``key`` if given; returns it pinned."""
    digest = build_image(source, ref, user=user)
    pinned = f"{ref}@{digest}"
    if key is not None:
        sign(source, pinned, key.private_pem)
    return pinned


def create_runtime(namespace: str, name: str, image: str) -> dict[str, Any]:
    body = runtime_manifest(name, namespace, image=image)
    return store.create(runtime_type(), namespace, body).object


def status_of(namespace: str, name: str) -> dict[str, Any]:
    return store.get(runtime_type(), namespace, name).get("status", {})


def verified(status: dict[str, Any]) -> dict[str, Any]:
    [condition] = [c for c in status["conditions"] if c["type"] == "Verified"]
    return condition


@contextmanager
def running(controller: Controller) -> Iterator[Controller]:
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield controller
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive(), "the controller did not stop within 10 s"


def retrying(action: Callable[[], Any]) -> Any:
    """Runs a store call of the test thread, again if SQLite says "table is locked".

    The test database is SQLite in shared-cache memory, where two threads' statements collide
    at once instead of waiting as they do on a WAL file; the controller retries such errors
    itself (with backoff), and the test thread does it here.
    """
    for _attempt in range(100):
        try:
            return action()
        except OperationalError:
            time.sleep(0.02)
    return action()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> float:
    """Seconds until ``predicate`` held; fails the test after ``timeout``."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            pytest.fail(f"not true within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - start
