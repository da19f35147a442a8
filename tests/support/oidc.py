"""A small but real OpenID provider for tests: RSA keys from `cryptography`, a real HTTP server
on a loopback port serving discovery, JWKS, authorize and token endpoints.

`id_token(...)` signs an ID token with the current key; `rotate()` makes a new key and stops
publishing the old one. The authorize endpoint signs in `next_user` without asking (a test
sets it), and the token endpoint checks the code, the client, the redirect URI and the PKCE
verifier (S256) before it answers with an ID token carrying the authorize request's nonce.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.support import liveserver
from tests.support.liveserver import LiveServer

CLIENT_ID = "nodus"
CLIENT_SECRET = "nodus-test-secret"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


@dataclass
class SigningKey:
    kid: str
    key: rsa.RSAPrivateKey

    @classmethod
    def new(cls) -> SigningKey:
        return cls(
            secrets.token_hex(8), rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )

    def jwk(self) -> dict[str, str]:
        numbers = self.key.public_key().public_numbers()
        return {
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": self.kid,
            "n": _int(numbers.n),
            "e": _int(numbers.e),
        }

    def sign(self, header: dict[str, Any], claims: dict[str, Any]) -> str:
        signed = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self.key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{_b64(signature)}"


@dataclass
class Provider:
    issuer: str = ""
    key: SigningKey = field(default_factory=SigningKey.new)
    jwks_fetches: int = 0
    # Bytes of padding added to the JWKS document (a provider answering something huge).
    jwks_padding: int = 0
    next_user: dict[str, Any] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    server: ThreadingHTTPServer | None = None

    def id_token(
        self,
        sub: str,
        groups: list[str] | None = None,
        *,
        aud: str = CLIENT_ID,
        lifetime: float = 300,
        key: SigningKey | None = None,
        **extra: Any,
    ) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": sub,
            "aud": aud,
            "iat": now,
            "exp": now + int(lifetime),
            "groups": groups or [],
            **extra,
        }
        signer = key or self.key
        return signer.sign({"alg": "RS256", "typ": "JWT", "kid": signer.kid}, claims)

    def rotate(self) -> SigningKey:
        """A new signing key; the old one is no longer published. Returns the old one."""
        old, self.key = self.key, SigningKey.new()
        return old

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def authorize(self, query: dict[str, str]) -> str:
        """The redirect back to the client with a code for `next_user`."""
        code = secrets.token_urlsafe(16)
        self.codes[code] = {**query, "user": dict(self.next_user)}
        back = {"code": code, "state": query.get("state", "")}
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or form.get("redirect_uri") != grant.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        if form.get("client_id", CLIENT_ID) != CLIENT_ID:
            return 401, {"error": "invalid_client"}
        verifier = form.get("code_verifier", "")
        challenge = _b64(hashlib.sha256(verifier.encode()).digest())
        if grant.get("code_challenge_method") != "S256" or grant.get("code_challenge") != challenge:
            return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        user = grant["user"]
        token = self.id_token(user["sub"], user.get("groups"), nonce=grant.get("nonce"))
        return 200, {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": token,
        }


def _handler(provider: Provider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/.well-known/openid-configuration":
                self._json(200, provider.discovery())
            elif parts.path == "/jwks":
                provider.jwks_fetches += 1
                keys = {"keys": [provider.key.jwk()], "padding": "x" * provider.jwks_padding}
                self._json(200, keys)
            elif parts.path == "/authorize":
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                self.send_response(302)
                self.send_header("Location", provider.authorize(query))
                self.end_headers()
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if "client_id" not in form and self.headers.get("Authorization", "").startswith(
                "Basic "
            ):
                basic = base64.b64decode(self.headers["Authorization"][6:]).decode()
                form["client_id"] = basic.partition(":")[0]
            self._json(*provider.token(form))

    return Handler


def start() -> Provider:
    """A provider serving on a free loopback port (stop it with `stop`)."""
    provider = Provider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(provider))
    provider.server = server
    provider.issuer = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, name="oidc-provider", daemon=True).start()
    return provider


def stop(provider: Provider) -> None:
    if provider.server is not None:
        provider.server.shutdown()
        provider.server.server_close()


def running() -> Iterator[Provider]:
    """A provider for a module's fixture: started, then stopped after the module."""
    provider = start()
    yield provider
    stop(provider)


def serving(provider: Provider, prefix: str, **settings: str) -> Iterator[LiveServer]:
    """A live server that signs in through `provider` (`settings` on top of the OIDC ones)."""

    def begin(data_dir: Path) -> LiveServer:
        return liveserver.start(
            data_dir,
            liveserver.prepare(data_dir),
            NODUS_OIDC_ISSUER_URL=provider.issuer,
            NODUS_OIDC_CLIENT_ID=CLIENT_ID,
            NODUS_OIDC_USERNAME_PREFIX="oidc:",
            NODUS_OIDC_GROUPS_PREFIX="oidc:",
            **settings,
        )

    yield from liveserver.serve(prefix, begin)
