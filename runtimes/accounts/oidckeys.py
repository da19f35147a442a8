"""The OpenID provider's discovery document and signing keys, fetched with bounded work.

Keys are fetched once and kept: a token signed with a key we hold costs no fetch. A token
naming an unknown `kid` (the provider rotated its keys) fetches the JWKS again, at most once per
`NODUS_OIDC_REFRESH_SECONDS` whatever the number of such tokens, and one fetch at a time. Every
fetch has a time limit (`NODUS_OIDC_FETCH_TIMEOUT`) and a size limit
(`NODUS_OIDC_MAX_DOCUMENT_BYTES`); a provider that is away, slow or answers garbage makes the
token fail (401), never the request hang or the server fail.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from runtimes.accounts.oidcconfig import OidcConfig

log = logging.getLogger("nodus.oidc")

MAX_KEYS = 50
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
_CURVES: dict[str, ec.EllipticCurve] = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1()}


class ProviderError(Exception):
    """The provider could not be asked, or answered something we cannot use."""


def _b64int(value: Any) -> int:
    if not isinstance(value, str) or len(value) > 2048:
        raise ProviderError("a key parameter is not a base64url string of bounded size")
    return int.from_bytes(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)), "big")


def public_key(jwk: dict[str, Any]) -> PublicKey:
    """One JWK (RSA or EC P-256/P-384) as a public key."""
    kty = jwk.get("kty")
    if kty == "RSA":
        return rsa.RSAPublicNumbers(_b64int(jwk.get("e")), _b64int(jwk.get("n"))).public_key()
    if kty == "EC" and jwk.get("crv") in _CURVES:
        curve = _CURVES[str(jwk["crv"])]
        numbers = ec.EllipticCurvePublicNumbers(_b64int(jwk.get("x")), _b64int(jwk.get("y")), curve)
        return numbers.public_key()
    raise ProviderError(f"unsupported key type {kty!r}")


def allowed_url(url: str) -> bool:
    """https, or plain http to a loopback address (a provider on the same machine)."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname in {"127.0.0.1", "localhost", "::1"}
    )


def fetch_json(config: OidcConfig, url: str) -> dict[str, Any]:
    """GET `url` as JSON within the time and size limits."""
    if not allowed_url(url):
        raise ProviderError(f"{url} is not https")
    limit = config.max_document_bytes
    try:
        with (
            httpx.Client(timeout=config.fetch_timeout, verify=config.verify) as client,
            client.stream("GET", url, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                raise ProviderError(f"{url} answered {response.status_code}")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > limit:
                    raise ProviderError(f"{url} sent more than {limit} bytes")
    except httpx.HTTPError as error:
        raise ProviderError(f"{url}: {error}") from error
    try:
        document = json.loads(body)
    except ValueError as error:
        raise ProviderError(f"{url} did not send JSON") from error
    if not isinstance(document, dict):
        raise ProviderError(f"{url} did not send a JSON object")
    return document


@dataclass
class KeySet:
    """The provider's keys by `kid`, and its discovery document, for one issuer."""

    config: OidcConfig
    discovery: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, PublicKey] = field(default_factory=dict)
    refetched_at: float | None = None
    fetches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def endpoint(self, name: str) -> str:
        """A URL from the discovery document (fetched on first use)."""
        with self._lock:
            if not self.discovery:
                self._discover()
        value = self.discovery.get(name)
        if not isinstance(value, str) or not allowed_url(value):
            raise ProviderError(f"the discovery document has no usable {name}")
        return value

    def _discover(self) -> None:
        url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        document = fetch_json(self.config, url)
        if document.get("issuer") != self.config.issuer:
            raise ProviderError("the discovery document names another issuer")
        self.discovery = document

    def key(self, kid: str) -> PublicKey | None:
        """The key named `kid`; fetches the JWKS when it is unknown and no fetch happened in
        the last `refresh_seconds` (so a flood of made-up kids costs one fetch per period)."""
        known = self.keys.get(kid)
        if known is not None:
            return known
        with self._lock:
            known = self.keys.get(kid)
            if known is not None:
                return known
            now = time.monotonic()
            if (
                self.refetched_at is not None
                and now - self.refetched_at < self.config.refresh_seconds
            ):
                return None
            # The first fetch is not a refetch: keys rotated soon after start are still found.
            if self.fetches:
                self.refetched_at = now
            try:
                self._fetch_keys()
            except ProviderError:
                log.warning("could not fetch the OIDC signing keys", exc_info=True)
                return None
            return self.keys.get(kid)

    def _fetch_keys(self) -> None:
        if not self.discovery:
            self._discover()
        url = self.discovery.get("jwks_uri")
        if not isinstance(url, str):
            raise ProviderError("the discovery document has no jwks_uri")
        self.fetches += 1
        document = fetch_json(self.config, url)
        entries = document.get("keys")
        if not isinstance(entries, list):
            raise ProviderError("the JWKS has no keys")
        keys: dict[str, PublicKey] = {}
        for entry in entries[:MAX_KEYS]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                keys[str(entry.get("kid", ""))] = public_key(entry)
            except (ProviderError, ValueError):
                continue  # one unusable key does not hide the others
        # Replaced whole: a key the provider dropped is no longer accepted.
        self.keys = keys
