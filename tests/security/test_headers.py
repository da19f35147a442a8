"""Secure defaults on the wire, against a live daphne on both of its listeners.

Every console page carries the CSP (no inline script or style allowed, and none in the page),
frame-ancestors 'none' with X-Frame-Options DENY, nosniff and the Referrer-Policy; HSTS only
over TLS. Cookies are HttpOnly and SameSite everywhere and Secure over TLS. The API's answers,
streams included, carry nosniff too.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from runtimes.console.runtime_page import TABS
from tests.support.liveserver import LiveServer

GV = "/apis/nodus.dev/v1beta1"
CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "font-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
HSTS = "max-age=31536000"
RUNTIME = "/p/nodus/runtimes/sft-qwen3"
CONSOLE_PAGES = (
    "/",
    "/?project=demo",
    *(f"{RUNTIME}/{tab}" for tab, _ in TABS),
    "/publish",
    "/compare?a=nodus/sft-qwen3&b=nodus/dpo-trl",
    "/account/tokens",
    "/projects",
    "/projects/demo/members",
    "/docs/api",
    "/docs/errors",
    "/docs/errors/Invalid",
    "/no-such-page",
)


def policy(response: httpx.Response) -> dict[str, str]:
    header = response.headers["Content-Security-Policy"]
    directives = (d.strip().split(" ", 1) for d in header.split(";") if d.strip())
    return {name: value for name, value in directives}


def assert_page_headers(response: httpx.Response, tls: bool) -> None:
    assert policy(response) == CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    if tls:
        assert response.headers["Strict-Transport-Security"] == HSTS
    else:
        assert "Strict-Transport-Security" not in response.headers


class _InlineCode(HTMLParser):
    """What a CSP without 'unsafe-inline' would block in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names and dict(attrs).get("type") != "application/json":
            self.found.append("inline <script>")
        if tag == "style":
            self.found.append("<style> element")
        for name, value in attrs:
            if name == "style" or name.startswith(("on", "hx-on", "data-hx-on")):
                self.found.append(f"<{tag} {name}={value!r}>")
            if value and value.strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")


def inline_code(html: str) -> list[str]:
    reader = _InlineCode()
    reader.feed(html)
    return reader.found


def cookies(response: httpx.Response) -> dict[str, dict[str, str | bool]]:
    found: dict[str, dict[str, str | bool]] = {}
    for line in response.headers.get_list("set-cookie"):
        jar: SimpleCookie = SimpleCookie()
        jar.load(line)
        for name, morsel in jar.items():
            found[name] = {
                "secure": bool(morsel["secure"]),
                "httponly": bool(morsel["httponly"]),
                "samesite": morsel["samesite"],
            }
    return found


def tls_context(server: LiveServer) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=server.ca_pem.decode())


def signed_in(server: LiveServer, who: str, tls: bool) -> tuple[httpx.Client, httpx.Response]:
    """A client that signed in through the login form; returns it and the login's answer."""
    base = server.https_url if tls else server.url
    client = httpx.Client(
        base_url=base,
        verify=tls_context(server) if tls else True,
        timeout=30,
        # Django checks the Origin of unsafe requests over HTTPS (a browser sends it).
        headers={"Origin": base},
    )
    client.get("/login")
    answer = client.post(
        "/login",
        data={
            "username": who,
            "password": f"{who}-pass",
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
    )
    assert answer.status_code == 302, answer.text
    return client, answer


@pytest.fixture(scope="module")
def console_http(daphne_server: LiveServer) -> Iterator[httpx.Client]:
    client, _ = signed_in(daphne_server, "alice", tls=False)
    yield client
    client.close()


@pytest.fixture(scope="module")
def console_https(daphne_server: LiveServer) -> Iterator[httpx.Client]:
    client, _ = signed_in(daphne_server, "alice", tls=True)
    yield client
    client.close()


@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_it_serves_every_console_page_over_http_with_the_headers_and_no_inline_code(
    console_http: httpx.Client, path: str
) -> None:
    response = console_http.get(path)
    assert response.status_code == (404 if path == "/no-such-page" else 200), response.text
    assert_page_headers(response, tls=False)
    assert inline_code(response.text) == []


@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_it_serves_every_console_page_over_https_with_hsts(
    console_https: httpx.Client, path: str
) -> None:
    response = console_https.get(path)
    assert response.status_code == (404 if path == "/no-such-page" else 200), response.text
    assert_page_headers(response, tls=True)


def test_it_serves_htmx_fragments_with_the_headers(console_http: httpx.Client) -> None:
    response = console_http.get("/?project=demo", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert_page_headers(response, tls=False)
    assert inline_code(response.text) == []


def test_it_serves_the_sign_in_page_and_admin_login_with_the_headers(
    daphne_server: LiveServer,
) -> None:
    for base, tls in ((daphne_server.url, False), (daphne_server.https_url, True)):
        with httpx.Client(base_url=base, verify=tls_context(daphne_server)) as client:
            for path in ("/login", "/admin/login/"):
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)
                assert_page_headers(response, tls=tls)
                assert inline_code(response.text) == [], path


def test_it_marks_cookies_secure_only_over_tls(daphne_server: LiveServer) -> None:
    _, plain = signed_in(daphne_server, "bob", tls=False)
    _, secure = signed_in(daphne_server, "bob", tls=True)
    flags = {"httponly": True, "samesite": "Lax"}
    assert cookies(plain) == {
        "sessionid": {**flags, "secure": False},
        "csrftoken": {**flags, "secure": False},
    }
    assert cookies(secure) == {
        "sessionid": {**flags, "secure": True},
        "csrftoken": {**flags, "secure": True},
    }


def test_it_marks_the_sign_out_cookies_secure_over_tls(daphne_server: LiveServer) -> None:
    client, _ = signed_in(daphne_server, "charlie", tls=True)
    out = client.post("/logout", data={"csrfmiddlewaretoken": client.cookies["csrftoken"]})
    client.close()
    assert out.status_code == 302
    # Django deletes the session cookie with an expired one (no HttpOnly: it holds nothing).
    assert "sessionid" in cookies(out)
    assert all(flags["secure"] for flags in cookies(out).values()), cookies(out)


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_it_sends_nosniff_and_the_policy_on_api_answers(
    daphne_server: LiveServer, tls: bool
) -> None:
    base = daphne_server.https_url if tls else daphne_server.url
    token = {"Authorization": f"Bearer {daphne_server.tokens['alice']}"}
    with httpx.Client(base_url=base, verify=tls_context(daphne_server), timeout=30) as client:
        for path, status in (
            ("/livez", 200),
            ("/version", 200),
            (f"{GV}/namespaces/demo/trainingruntimes", 200),
            (f"{GV}/namespaces/demo/trainingruntimes/nothing-here", 404),
            ("/openapi/v3", 200),
        ):
            response = client.get(path, headers=token)
            assert response.status_code == status, (path, response.text)
            assert_page_headers(response, tls=tls)
        with client.stream(
            "GET", f"{GV}/namespaces/demo/trainingruntimes?watch=1&timeoutSeconds=1", headers=token
        ) as watch:
            assert watch.status_code == 200
            assert watch.headers["X-Content-Type-Options"] == "nosniff"
            assert ("Strict-Transport-Security" in watch.headers) is tls


def test_it_serves_scripts_and_styles_with_types_that_pass_nosniff(
    daphne_server: LiveServer,
) -> None:
    page = httpx.get(f"{daphne_server.url}/login").text
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert any(a.endswith(".js") for a in assets)
    assert any(a.endswith(".css") for a in assets)
    for asset in assets:
        response = httpx.get(daphne_server.url + asset)
        assert response.status_code == 200, asset
        kind = "text/javascript" if asset.endswith(".js") else "text/css"
        assert response.headers["Content-Type"].startswith(kind), asset
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_it_keeps_every_template_free_of_inline_script_and_style() -> None:
    # Also the fragments and states the pages above do not reach (the 500 page, live pushes).
    inline = re.compile(
        r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|\s(?:data-)?hx-on|javascript:",
        re.IGNORECASE,
    )
    templates = sorted((Path(settings.BASE_DIR) / "templates").rglob("*.html"))
    assert templates
    found = [
        f"{path.name}: {match.group(0).strip()}"
        for path in templates
        for match in inline.finditer(path.read_text())
    ]
    assert found == []
