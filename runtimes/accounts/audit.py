"""audit.k8s.io/v1 Events at level Metadata: who did what to which object, from where, and
what the answer was. The request path builds them in `runtimes.api.auditing`; the controller
records its own writes with `record_write`. `auditlog` writes them.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from runtimes.accounts import auditlog
from runtimes.accounts.access import CONTROLLER_ACCOUNT, User, groups_of

MAX_USER_AGENT = 1024
MAX_URI = 4096


def timestamp(when: datetime | None = None) -> str:
    """RFC 3339 with microseconds, as kube's MicroTime."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def user_info(user: User | None) -> dict[str, Any]:
    """The caller as kube's authenticator names it, groups included."""
    if user is None or not user.is_authenticated:
        return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    return {
        "username": user.get_username(),
        "groups": [*groups_of(user), "system:authenticated"],
    }


def object_ref(
    resource: str, namespace: str, name: str, api_group: str, api_version: str, subresource: str
) -> dict[str, str]:
    ref = {
        "resource": resource,
        "namespace": namespace,
        "name": name,
        "apiGroup": api_group,
        "apiVersion": api_version,
        "subresource": subresource,
    }
    return {key: value for key, value in ref.items() if value}


def event(
    *,
    audit_id: str,
    verb: str,
    user: dict[str, Any],
    request_uri: str,
    code: int,
    received: str,
    ref: dict[str, str] | None = None,
    source_ips: list[str] | None = None,
    user_agent: str = "",
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id,
        "stage": "ResponseComplete",
        "requestURI": request_uri[:MAX_URI],
        "verb": verb,
        "user": user,
        "sourceIPs": source_ips or [],
        "userAgent": user_agent[:MAX_USER_AGENT],
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": received,
        "stageTimestamp": timestamp(),
    }
    if ref:
        body["objectRef"] = ref
    if annotations:
        body["annotations"] = annotations
    return body


def record_write(verb: str, ref: dict[str, str], code: int = 200) -> None:
    """The controller's own write (it calls the store, not the API), as its service account."""
    now = timestamp()
    parts = [
        f"/apis/{ref['apiGroup']}" if ref.get("apiGroup") else "/api",
        ref.get("apiVersion", ""),
    ]
    if ref.get("namespace"):
        parts += ["namespaces", ref["namespace"]]
    parts += [ref.get("resource", ""), ref.get("name", ""), ref.get("subresource", "")]
    user = {
        "username": CONTROLLER_ACCOUNT,
        "groups": ["system:serviceaccounts", "system:authenticated"],
    }
    auditlog.emit(
        event(
            audit_id=uuid.uuid4().hex,
            verb=verb,
            user=user,
            request_uri="/".join(p for p in parts if p).replace("//", "/"),
            code=code,
            received=now,
            ref=ref,
            annotations={"nodus.dev/origin": "controller"},
        )
    )


def _api_group_version(path: str) -> tuple[str, str]:
    """(group, version) of an API path: /api/v1/... is the core group ""."""
    parts = [*path.lstrip("/").split("/"), "", ""]
    if parts[0] == "api":
        return "", parts[1]
    if parts[0] == "apis":
        return parts[1], parts[2]
    return "", ""


def record_websocket(scope: dict[str, Any], user: User | None, code: int, verb: str) -> None:
    """A websocket's opening or refusal (an API watch, the console's live socket): Django's
    middleware never sees websockets."""
    kwargs = (scope.get("url_route") or {}).get("kwargs", {})
    path = str(scope.get("path", ""))
    group, version = _api_group_version(path)
    headers = dict(scope.get("headers") or [])
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    client = scope.get("client") or ("",)
    auditlog.emit(
        event(
            audit_id=uuid.uuid4().hex,
            verb=verb,
            user=user_info(user),
            request_uri=f"{path}?{query}" if query else path,
            code=code,
            received=timestamp(),
            ref=object_ref(
                str(kwargs.get("plural", "")),
                str(kwargs.get("namespace", "")),
                "",
                group,
                version,
                "",
            ),
            source_ips=[str(client[0])],
            user_agent=headers.get(b"user-agent", b"").decode("latin-1"),
        )
    )
