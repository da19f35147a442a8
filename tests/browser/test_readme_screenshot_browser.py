"""The README's screenshot of the catalog, taken from a live server as a newcomer sees it.

Every run takes it again into test-artifacts/; `make screenshots` (NODUS_UPDATE_SCREENSHOTS=1)
also writes it over docs/img/catalog.png, so the picture follows the console.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import set_phase
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
README_SHOT = ROOT / "docs" / "img" / "catalog.png"
VIEWPORT = {"width": 1280, "height": 800}


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_it_takes_the_readmes_catalog_screenshot(
    session_for: Any, daphne_server: LiveServer
) -> None:
    # As a running controller leaves them: the managed catalog verified.
    runtimes = "/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes"
    for item in daphne_server.client("root").get(runtimes).json()["items"]:
        set_phase(daphne_server, f"{runtimes}/{item['metadata']['name']}", "Ready")
    session = session_for("alice", viewport=VIEWPORT)
    page = session.go("/")
    session.wait_live()
    page.wait_for_selector("#runtime-rows tr")
    fresh = session.shot("readme-catalog", full_page=False)

    assert png_size(fresh) == (VIEWPORT["width"], VIEWPORT["height"])
    if os.environ.get("NODUS_UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(fresh, README_SHOT)
    assert "docs/img/catalog.png" in (ROOT / "README.md").read_text()
    assert png_size(README_SHOT) == png_size(fresh), "run `make screenshots` to retake it"
