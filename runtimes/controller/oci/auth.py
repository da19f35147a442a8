"""Registry authentication: ``WWW-Authenticate`` challenges, Basic and Bearer token exchange.

Implements the distribution token flow: a 401 names a realm, service and scope; we ask the
realm for a token (with Basic credentials when we have some) and retry with ``Bearer``.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass

import httpx

from runtimes.controller.oci.errors import (
    RegistryRefused,
    RegistryUnauthorized,
    RegistryUnavailable,
)


@dataclass(frozen=True)
class Credential:
    """Per-registry login; ``password`` may be a personal access token."""

    username: str
    password: str = ""

    def basic_header(self) -> str:
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


@dataclass(frozen=True)
class Challenge:
    scheme: str  # lowercased: "basic" or "bearer"
    params: dict[str, str]  # keys lowercased, values unquoted


_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_SCHEME = re.compile(rf"[\s,]*({_TOKEN})(?:\s+|$)")
# Unquoted values should be tokens; registries are lax (bare URLs), so accept up to a comma.
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,"]+)\s*(?:,|$)')


def parse_www_authenticate(header: str) -> list[Challenge]:
    """All challenges in one header value (RFC 7235; commas inside quoted scopes are kept)."""
    challenges: list[Challenge] = []
    pos = 0
    while pos < len(header):
        scheme = _SCHEME.match(header, pos)
        if not scheme:
            break
        pos = scheme.end()
        params: dict[str, str] = {}
        while (param := _PARAM.match(header, pos)) is not None:
            value = param.group(2)
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            params[param.group(1).lower()] = value
            pos = param.end()
        challenges.append(Challenge(scheme=scheme.group(1).lower(), params=params))
    return challenges


def split_host(registry: str) -> str:
    """The host of ``host[:port]``, brackets removed from IPv6 literals."""
    if registry.startswith("["):
        return registry[1 : registry.index("]")]
    return registry.rsplit(":", 1)[0] if registry.count(":") == 1 else registry


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def fetch_token(
    http: httpx.Client,
    challenge: Challenge,
    scopes: list[str],
    credential: Credential | None,
) -> str:
    """Exchanges a Bearer challenge for a token at its realm."""
    realm = challenge.params.get("realm", "")
    url = httpx.URL(realm) if realm else None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise RegistryUnauthorized(f"bearer challenge has no usable realm: {realm!r}")
    # Credentials (and the token) must never cross the network in clear text.
    if url.scheme == "http" and not is_loopback(url.host):
        raise RegistryRefused(f"token realm {realm} is plain HTTP on a non-loopback host")
    params: list[tuple[str, str | int | float | bool | None]] = []
    if "service" in challenge.params:
        params.append(("service", challenge.params["service"]))
    params.extend(("scope", scope) for scope in dict.fromkeys(scopes) if scope)
    headers = {"Authorization": credential.basic_header()} if credential else {}
    try:
        response = http.get(url, params=params, headers=headers)
    except httpx.TransportError as exc:
        raise RegistryUnavailable(f"token realm {realm}: {exc!r}") from exc
    if response.status_code in (401, 403):
        raise RegistryUnauthorized(f"token realm {realm} refused the credentials")
    if response.status_code == 429 or response.status_code >= 500:
        raise RegistryUnavailable(f"token realm {realm} answered {response.status_code}")
    if response.status_code != 200:
        raise RegistryUnauthorized(f"token realm {realm} answered {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise RegistryUnauthorized(f"token realm {realm} answered with non-JSON") from None
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise RegistryUnauthorized(f"token realm {realm} returned no token")
    return token
