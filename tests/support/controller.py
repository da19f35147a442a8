"""The controller's test world: a trusted key pair, an image layout, runtimes in the store.

``make_world`` gives a ``World`` whose ``config`` and ``reconciler`` are what a controller gets
for it; ``publish`` builds (and signs) an image into a layout or registry; the rest create
runtimes and read back what the controller wrote.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
