"""Delivery over HTTP against a live server: static files under content-hashed names, cached for
a year and gzipped; console pages gzipped, API responses as they were; `manage.py serve` collects
the static files itself, once; and the size budgets of the pages and of our CSS and JS.

Sizes are bytes on the wire with ``Accept-Encoding: gzip`` (the body, as sent, without headers).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from runtimes.console.runtime_page import TABS
from tests.support.api import GV
from tests.support.liveserver import LiveServer, prepare, serve_command, server_environment

GZIP = {"Accept-Encoding": "gzip"}
ASSET = re.compile(r'(?:src|href)="(/static/[^"]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
# The CSRF token, wherever the page carries it (masked anew in every response).
TOKEN = re.compile(r"\b[A-Za-z0-9]{64}\b")
HASHED = re.compile(r"\.[0-9a-f]{12}\.(?:css|js)$")
A_YEAR = "max-age=31536000, public, immutable"
PAGE_BUDGET = 100_000
ASSET_BUDGET = 80_000
RUNTIME = "/p/nodus/runtimes/sft-qwen3"


@contextmanager
def signed_in(server: LiveServer, who: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        form = client.get("/login").text
        token = CSRF.search(form)
        assert token, form
        data = {"username": who, "password": f"{who}-pass", "csrfmiddlewaretoken": token.group(1)}
        assert client.post("/login", data=data).status_code == 302
        yield client


def on_the_wire(client: httpx.Client, path: str) -> tuple[httpx.Response, int, bytes]:
    """The response, its body's size as sent with gzip accepted, and the body decoded."""
    with client.stream("GET", path, headers=GZIP) as response:
        sent = sum(len(chunk) for chunk in response.iter_raw())
    # Read again to decode (the stream above kept the raw bytes only).
    decoded = client.get(path, headers=GZIP).content
    return response, sent, decoded


def test_it_links_static_files_by_content_hash_and_caches_them_for_a_year(
    daphne_server: LiveServer,
) -> None:
    with httpx.Client(base_url=daphne_server.url, timeout=30) as client:
        assets = ASSET.findall(client.get("/login").text)
        assert {Path(a).name.split(".")[0] for a in assets} >= {"console", "live", "htmx-2"}
        for asset in assets:
            assert HASHED.search(asset), asset
            response = client.get(asset, headers=GZIP)
            assert response.status_code == 200, asset
            assert response.headers["Content-Encoding"] == "gzip", asset
            assert response.headers["Cache-Control"] == A_YEAR, asset
            assert "Accept-Encoding" in response.headers["Vary"], asset
            # The source name still answers, with the same bytes, but is cached briefly.
            source = client.get(HASHED.sub(lambda m: m.group(0)[13:], asset))
            assert source.status_code == 200, asset
            assert "immutable" not in source.headers["Cache-Control"], asset
            assert source.content == response.content, asset


def test_it_gzips_pages_and_leaves_api_responses_as_they_were(daphne_server: LiveServer) -> None:
    with httpx.Client(base_url=daphne_server.url, timeout=30) as client:
        page = client.get("/docs/api", headers=GZIP)
        assert page.headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in page.headers["Vary"]
        assert "API reference" in page.text
        plain = client.get("/docs/api", headers={"Accept-Encoding": "identity"})
        assert "Content-Encoding" not in plain.headers
        assert TOKEN.sub("", plain.text) == TOKEN.sub("", page.text)

        api = {**GZIP, "Authorization": f"Bearer {daphne_server.tokens['alice']}"}
        listed = client.get(f"{GV}/namespaces/nodus/trainingruntimes", headers=api)
        assert listed.status_code == 200
        assert "Content-Encoding" not in listed.headers
        assert listed.json()["items"]


def test_it_masks_the_csrf_token_in_every_compressed_page(daphne_server: LiveServer) -> None:
    # Against BREACH (docs/security.md): a secret that repeats byte for byte across responses
    # could be guessed from compressed sizes; the token in the page differs every time.
    with httpx.Client(base_url=daphne_server.url, timeout=30) as client:
        tokens = set()
        for _ in range(3):
            page = client.get("/login", headers=GZIP)
            assert page.headers["Content-Encoding"] == "gzip"
            found = CSRF.search(page.text)
            assert found
            tokens.add(found.group(1))
        assert len(tokens) == 3


def test_it_keeps_pages_and_our_css_and_js_within_budget(daphne_server: LiveServer) -> None:
    pages = ["/", *(f"{RUNTIME}/{tab}" for tab, _ in TABS), "/docs/api"]
    sizes: dict[str, tuple[int, int]] = {}
    assets: set[str] = set()
    with signed_in(daphne_server, "alice") as client:
        for path in pages:
            response, sent, decoded = on_the_wire(client, path)
            assert response.status_code == 200, path
            assert response.headers["Content-Encoding"] == "gzip", path
            sizes[path] = (sent, len(decoded))
            assets |= set(ASSET.findall(decoded.decode()))
        asset_sizes = {a: on_the_wire(client, a)[1:] for a in sorted(assets)}
    print("\ntransfer sizes with Accept-Encoding: gzip (bytes sent / decoded)")
    for path, (sent, full) in sizes.items():
        print(f"  page   {path:<40} {sent:>8} / {full:>8}")
    for asset, (sent, decoded) in asset_sizes.items():
        print(f"  static {asset:<40} {sent:>8} / {len(decoded):>8}")
    total = sum(sent for sent, _ in asset_sizes.values())
    print(f"  CSS + JS in total: {total} bytes")
    largest = max(sizes, key=lambda p: sizes[p][0])
    assert sizes[largest][0] < PAGE_BUDGET, f"{largest}: {sizes[largest][0]} bytes"
    assert total < ASSET_BUDGET, asset_sizes


def test_serve_collects_the_static_files_once(tmp_path: Path) -> None:
    prepare(tmp_path, server_environment(tmp_path))
    static = tmp_path / "static"
    with serve_command(tmp_path, NODUS_STATIC_ROOT=str(static)) as (_process, port):
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/login").text
        css = re.search(r'href="(/static/console/console\.[0-9a-f]{12}\.css)"', page)
        assert css
        response = httpx.get(base + css.group(1), headers=GZIP)
        assert response.headers["Cache-Control"] == A_YEAR
        assert response.headers["Content-Encoding"] == "gzip"
    manifest = static / "staticfiles.json"
    collected = manifest.stat().st_mtime_ns
    with serve_command(tmp_path, NODUS_STATIC_ROOT=str(static)) as (_process, port):
        assert httpx.get(f"http://127.0.0.1:{port}/login").status_code == 200
    assert manifest.stat().st_mtime_ns == collected  # the second start collected nothing
