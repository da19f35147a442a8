"""Helpers for the console's view tests: runtimes put in the store as the controller leaves
them, the managed catalog, signed-in clients, and what a browser would submit from a form.

The `catalog_data` fixture built from them lives in tests/console/conftest.py."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from html import unescape
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.http import QueryDict
from django.test import Client

from nodus_console.asgi import application
from runtimes.apimachinery.meta import Obj
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.registry.seeding import MANAGED_CATALOG, load_manifests
from runtimes.storage import store
from tests.support.api import GV, job_manifest


def put_runtime(namespace: str, manifest: Obj, phase: str | None = None) -> Obj:
    """Creates a runtime and, like the controller would, sets its phase through /status."""
    obj = store.create(TRAINING_RUNTIMES, namespace, manifest).object
    if phase is None:
        return obj

    def change(current: Obj) -> Obj:
        generation = current["metadata"]["generation"]
        status = {**current.get("status", {}), "phase": phase, "observedGeneration": generation}
        current["status"] = status
        return current

    name = obj["metadata"]["name"]
    return store.mutate(TRAINING_RUNTIMES, namespace, name, change, subresource="status").object


def managed_catalog() -> list[Obj]:
    return [copy.deepcopy(m) for m in load_manifests(MANAGED_CATALOG)]


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


class _FormReader(HTMLParser):
    """Collects what a browser would submit from the HTML of a form."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._select_first: str | None = None
        self._select_chosen = False
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "input" and "name" in a and "disabled" not in a:
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind in ("button", "submit"):
                return
            self.fields.append((a["name"], a.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "select" and "name" in a:
            self._select, self._select_first, self._select_chosen = a["name"], None, False
        elif tag == "option" and self._select is not None:
            if self._select_first is None:
                self._select_first = a.get("value", "")
            if "selected" in a and not self._select_chosen:
                self._select_chosen = True
                self.fields.append((self._select, a.get("value", "")))
        elif tag == "textarea" and "name" in a:
            self._textarea, self._text = a["name"], []

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select is not None:
            if not self._select_chosen and self._select_first is not None:
                self.fields.append((self._select, self._select_first))
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            self.fields.append((self._textarea, "".join(self._text).lstrip("\n")))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)


def form_fields(html: str, **changes: str | list[str] | None) -> QueryDict:
    """The submission of `html`'s form, with some fields changed (None removes a field)."""
    reader = _FormReader()
    reader.feed(html)
    data = QueryDict(mutable=True)
    for name, value in reader.fields:
        data.appendlist(name, unescape(value))
    for name, value in changes.items():
        name = name.replace("__", ".")
        if value is None:
            data.pop(name, None)
        elif isinstance(value, list):
            data.setlist(name, value)
        else:
            data[name] = value
    return data


def row_ids(body: str) -> list[str]:
    return re.findall(r'<tr id="(tr-[^"]+)"', body)


def query_of(href: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(href).query)


def header(body: str, label: str) -> str:
    """The <th> of the column `label`."""
    for th in re.findall(r"<th scope=\"col\"[^>]*>.*?</th>", body):
        if re.sub(r"<[^>]+>", "", th) == label:
            return th
    raise AssertionError(f"no column {label!r}")


def add_job(api: Any, name: str, **spec: Any) -> dict[str, Any]:
    """alice creates a job of sft-qwen3 in demo (`spec` on top of `job_manifest`'s)."""
    response = api("alice").post(f"{GV}/namespaces/demo/trainingjobs", job_manifest(name, **spec))
    assert response.status_code == 201, response.json_body
    created: dict[str, Any] = response.json_body
    return created


def session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(user: Any | None, origin: bytes = b"http://testserver") -> WebsocketCommunicator:
    headers = [(b"host", b"testserver"), (b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(session_cookie)(user)))
    return WebsocketCommunicator(application, "/ws/console", headers=headers)


async def receive_until(socket: WebsocketCommunicator, wanted: Callable[[str], bool]) -> str:
    """The first push for which `wanted` holds (a write may reach the page over two pushes)."""
    for _ in range(10):
        message = await socket.receive_from(timeout=5)
        if wanted(message):
            return message
    raise AssertionError("no such push")
