"""The controller's settings, read once from Django settings into plain values.

Registries come from ``NODUS_REGISTRY_ALLOW`` (comma list, ``*`` admits any) and
``NODUS_REGISTRY_CREDENTIALS`` (a JSON file ``{"host": {"username": .., "password": ..}}``);
trusted cosign keys from ``NODUS_TRUSTED_KEYS`` (PEM paths); the embedded default's images from
the image layout at ``NODUS_IMAGE_LAYOUT``. Everything below this module takes these values, not
Django, so the reconcile logic stays testable without settings.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.controller.oci.auth import Credential
from runtimes.controller.oci.client import RegistrySettings
from runtimes.controller.signing.cosign import TrustedKey

log = logging.getLogger("nodus.controller")


@dataclass(frozen=True)
class ControllerSettings:
    registry: RegistrySettings
    layout_root: Path
    trusted_key_paths: tuple[Path, ...] = ()
    resync_seconds: float = 300.0  # every runtime is re-inspected this often
    # The longest the informer waits for events before looking at stop again, and the pause
    # before it retries after database trouble (the hub reads the log and polls it itself).
    poll_seconds: float = 1.0
    backoff_base: float = 1.0  # first retry after transient trouble, doubled each time
    backoff_max: float = 300.0  # 5 minutes, as the longest a runtime waits between tries
    # Each retry delay is shortened by a random fraction of up to this: 2,000 runtimes that
    # failed together come back spread over a quarter of the delay, not in one burst.
    backoff_jitter: float = 0.25
    # Reconciles run at once. Two keep a registry timeout from stalling everything while
    # bounding the threads (and database connections) the controller takes from the process.
    workers: int = 2
    # The share of one core the workers may use together: after a reconcile that used t s of
    # CPU, its worker rests t * (workers / cpu_share - 1). The embedded controller shares the
    # interpreter lock with the request threads; 0.2 keeps a backlog of thousands of runtimes
    # from stretching API latency. 1.0 turns the pacing off.
    cpu_share: float = 0.2
    leader_retry_seconds: float = 1.0  # how often a standby tries to take the lock
    lock_path: Path = field(default_factory=lambda: Path("controller.lock"))


class TrustedKeys:
    """The PEM files of ``trusted_key_paths``, re-read when one changes (the seed writes one)."""

    def __init__(self, paths: tuple[Path, ...]) -> None:
        self.paths = paths
        self._seen: tuple[tuple[str, float, int], ...] | None = None
        self._keys: list[TrustedKey] = []

    def current(self) -> list[TrustedKey]:
        stamp = tuple(_stamp(path) for path in self.paths)
        if stamp != self._seen:
            self._keys = [key for path in self.paths if (key := _load(path)) is not None]
            self._seen = stamp
        return self._keys


def _stamp(path: Path) -> tuple[str, float, int]:
    try:
        status = path.stat()
    except OSError:
        return (str(path), 0.0, -1)
    return (str(path), status.st_mtime, status.st_size)


def _load(path: Path) -> TrustedKey | None:
    try:
        return TrustedKey.from_pem(path.read_bytes())
    except FileNotFoundError:
        log.warning("trusted key %s does not exist (yet); not trusting it", path)
    except (OSError, ValueError) as exc:
        log.error("trusted key %s is unusable: %s", path, exc)
    return None


def split_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item and item.strip()]


def load_credentials(path: str | Path | None) -> dict[str, Credential]:
    """``{"registry.example.com": {"username": "u", "password": "p"}}`` from a JSON file."""
    if not path:
        return {}
    document: Any = json.loads(Path(path).read_text())
    if not isinstance(document, dict):
        raise ValueError(f"{path}: registry credentials must be a JSON object keyed by host")
    credentials: dict[str, Credential] = {}
    for host, entry in document.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("username"), str):
            raise ValueError(f"{path}: {host} needs a username (and a password or token)")
        credentials[host] = Credential(entry["username"], str(entry.get("password", "")))
    return credentials


def default_key_dir(data_dir: Path) -> Path:
    """Where the embedded default keeps its signing key pair: DATA_DIR/keys."""
    return data_dir / "keys"


def layout_root() -> Path:
    """The local image layout's directory, from the project's settings."""
    from django.conf import settings

    return Path(settings.NODUS_IMAGE_LAYOUT or Path(settings.DATA_DIR) / "oci-layout")


def from_django() -> ControllerSettings:
    from django.conf import settings

    data_dir = Path(settings.DATA_DIR)
    allowed = split_list(settings.NODUS_REGISTRY_ALLOW)
    # Unset means the embedded default's own key; set to "" to trust no key at all.
    keys = split_list(settings.NODUS_TRUSTED_KEYS)
    return ControllerSettings(
        registry=RegistrySettings(
            allowed_registries=frozenset(allowed),
            credentials=load_credentials(settings.NODUS_REGISTRY_CREDENTIALS),
            timeout=float(settings.NODUS_REGISTRY_TIMEOUT),
        ),
        layout_root=layout_root(),
        trusted_key_paths=tuple(Path(os.path.expanduser(key)) for key in keys),
        resync_seconds=float(settings.NODUS_CONTROLLER_RESYNC_SECONDS),
        poll_seconds=float(settings.NODUS_CONTROLLER_POLL_SECONDS),
        backoff_base=float(settings.NODUS_CONTROLLER_BACKOFF_SECONDS),
        backoff_max=float(settings.NODUS_CONTROLLER_BACKOFF_MAX_SECONDS),
        backoff_jitter=float(settings.NODUS_CONTROLLER_BACKOFF_JITTER),
        workers=int(settings.NODUS_CONTROLLER_WORKERS),
        cpu_share=float(settings.NODUS_CONTROLLER_CPU_SHARE),
        lock_path=data_dir / "controller.lock",
    )
