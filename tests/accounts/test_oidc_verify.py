"""`accounts.oidc.verify` on its own: ES256 signatures, and an algorithm that does not match
its key (the issuer's keys placed in its key set, as a JWKS fetch would place them)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from runtimes.accounts import oidc
from runtimes.accounts.oidcconfig import OidcConfig

ISSUER = "https://issuer.example"
CONFIG = OidcConfig(issuer=ISSUER, client_id="nodus", username_claim="email")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _es256(key: ec.EllipticCurvePrivateKey, alg: str, claims: dict[str, Any]) -> str:
    header = _b64(json.dumps({"alg": alg, "kid": "ec"}).encode())
    body = _b64(json.dumps(claims).encode())
    r, s = decode_dss_signature(key.sign(f"{header}.{body}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{header}.{body}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


@pytest.fixture
def key() -> Any:
    private = ec.generate_private_key(ec.SECP256R1())
    oidc.forget_keys()
    keys = oidc.keyset(CONFIG)
    keys.keys["ec"] = private.public_key()
    keys.fetches = 1
    yield private
    oidc.forget_keys()


def _claims(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "aud": ["other", "nodus"], "exp": now + 60, **extra}


def test_it_accepts_es256_and_an_email_username_without_prefix(key: Any) -> None:
    token = _es256(key, "ES256", _claims(email="dana@example.com", groups="ml"))
    identity = oidc.verify(token, CONFIG)
    assert identity.username == "dana@example.com"
    assert identity.groups == ("ml",)


def test_it_refuses_an_unverified_email(key: Any) -> None:
    token = _es256(key, "ES256", _claims(email="dana@example.com", email_verified=False))
    with pytest.raises(oidc.InvalidToken, match="not verified"):
        oidc.verify(token, CONFIG)


def test_it_refuses_an_algorithm_that_does_not_match_the_key(key: Any) -> None:
    token = _es256(key, "RS256", _claims(email="dana@example.com"))
    with pytest.raises(oidc.InvalidToken, match="does not match"):
        oidc.verify(token, CONFIG)


def test_it_refuses_a_token_not_valid_yet(key: Any) -> None:
    token = _es256(key, "ES256", _claims(email="d@example.com", nbf=int(time.time()) + 600))
    with pytest.raises(oidc.InvalidToken, match="not valid yet"):
        oidc.verify(token, CONFIG)
