"""A console session over plain HTTP, as a browser makes one: the sign-in form, then forms
posted with their CSRF token (console pages and Django admin alike)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.support.liveserver import LiveServer


def signed_in(server: LiveServer, who: str, password: str | None = None) -> httpx.Client:
    """A client holding `who`'s session, signed in through the sign-in form."""
    client = httpx.Client(base_url=server.url, timeout=30)
    page = client.get("/login")
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert match, page.text
    answer = client.post(
        "/login",
        data={
            "username": who,
            "password": password or f"{who}-pass",
            "csrfmiddlewaretoken": match[1],
        },
    )
    assert answer.status_code == 302, answer.text
    return client


def submit(client: httpx.Client, path: str, data: Any) -> httpx.Response:
    """POSTs a form the way the browser would, CSRF token included; `data` is a dict or a
    QueryDict (tests.support.console.form_fields)."""
    csrf = client.cookies["csrftoken"]
    body = dict(data) if isinstance(data, dict) else {k: data.getlist(k) for k in data}
    body["csrfmiddlewaretoken"] = csrf
    return client.post(path, data=body, headers={"X-CSRFToken": csrf})


def member_id(page: str, username: str) -> str:
    """The membership id of `username` on a project's Members page."""
    match = re.search(rf'<th scope="row">{username}</th>.*?name="member" value="(\d+)"', page, re.S)
    assert match, page
    return match[1]
