"""Which ``ImageSource`` serves an image: the local image layout, or an allow-listed registry.

The layout serves a repository when it holds a tag of it (the embedded default keeps its
``registry.nodus.dev/...`` images there); anything else goes to the registry client, which
refuses hosts off the allow-list before any connection (``RegistryRefused``).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.images import ImageSource
from runtimes.controller.oci.layout import REF_NAME, LayoutStore
from runtimes.controller.oci.reference import ImageReference


class ImageSources:
    """Picks the source per image; one registry client is shared (it caches auth tokens)."""

    def __init__(self, layout_root: Path | str, registry: RegistrySettings) -> None:
        self.layout = LayoutStore(layout_root)
        self.registry_settings = registry
        self._client: RegistryClient | None = None
        self._lock = threading.Lock()

    def for_reference(self, ref: ImageReference) -> ImageSource:
        if ref.name in self.layout_repositories():
            return self.layout
        return self.registry

    @property
    def registry(self) -> RegistryClient:
        with self._lock:
            if self._client is None:
                self._client = RegistryClient(self.registry_settings)
            return self._client

    def layout_repositories(self) -> set[str]:
        """``registry/repository`` names the layout has tags for."""
        try:
            index = json.loads((self.layout.root / "index.json").read_bytes())
        except (FileNotFoundError, ValueError):
            return set()
        names: set[str] = set()
        for entry in index.get("manifests", []) if isinstance(index, dict) else []:
            name = ((entry or {}).get("annotations") or {}).get(REF_NAME)
            if isinstance(name, str) and ":" in name:
                names.add(name.rsplit(":", 1)[0])
        return names

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
