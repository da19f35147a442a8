"""ID tokens as bearer tokens, validated as kube-apiserver validates them.

A token is accepted when its signature verifies with one of the issuer's keys (RS256 or ES256,
`accounts.oidckeys`), `iss` is the configured issuer, `aud` holds the client id, `exp` is in
the future (and `nbf`, if any, in the past), and the username claim is a string (`email` only
when `email_verified` is not false). The caller is the local user named by the prefixed claim,
created on first sight without a password, and carries the token's prefixed groups, which role
bindings to groups match (`accounts.access`). A deactivated user is refused. Anything wrong is
`InvalidToken`, which the API answers with 401.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from runtimes.accounts import revocation
from runtimes.accounts.memo import EpochMemo
from runtimes.accounts.oidcconfig import OidcConfig, config
from runtimes.accounts.oidckeys import KeySet, PublicKey

log = logging.getLogger("nodus.oidc")

MAX_GROUPS = 256
MAX_NAME = 150  # Django's username length
_keysets: dict[str, KeySet] = {}


class InvalidToken(Exception):
    """Why a token was refused (logged; the client gets a plain 401)."""


@dataclass(frozen=True)
class Identity:
    username: str
    groups: tuple[str, ...]
    expires_at: float


def looks_like_id_token(token: str) -> bool:
    """A JWT shape (three dot-separated parts): our own API tokens never have one."""
    return token.count(".") == 2 and config() is not None


def keyset(settings_: OidcConfig) -> KeySet:
    found = _keysets.get(settings_.issuer)
    if found is None or found.config != settings_:
        found = _keysets[settings_.issuer] = KeySet(settings_)
    return found


def _segment(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError as error:
        raise InvalidToken("a part of the token is not base64url") from error


def _json(part: str) -> dict[str, Any]:
    try:
        value = json.loads(_segment(part))
    except ValueError as error:
        raise InvalidToken("a part of the token is not JSON") from error
    if not isinstance(value, dict):
        raise InvalidToken("a part of the token is not a JSON object")
    return value


def _verify(key: PublicKey, alg: str, signed: bytes, signature: bytes) -> None:
    try:
        if alg == "RS256" and isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
            return
        if alg == "ES256" and isinstance(key, ec.EllipticCurvePublicKey) and len(signature) == 64:
            r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
            key.verify(encode_dss_signature(r, s), signed, ec.ECDSA(hashes.SHA256()))
            return
    except InvalidSignature as error:
        raise InvalidToken("the signature does not verify") from error
    raise InvalidToken(f"the algorithm {alg!r} does not match the key")


def verify(token: str, settings_: OidcConfig, now: float | None = None) -> Identity:
    """The token's identity, or InvalidToken saying why not."""
    if len(token) > settings_.max_token_bytes:
        raise InvalidToken("the token is too long")
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("the token is not a JWT")
    head, body, signature = parts
    header, claims = _json(head), _json(body)
    alg = header.get("alg")
    if alg not in {"RS256", "ES256"}:
        raise InvalidToken(f"the algorithm {alg!r} is not accepted")
    # The issuer is checked before any key is looked up, so a foreign token fetches nothing.
    if claims.get("iss") != settings_.issuer:
        raise InvalidToken("the token is from another issuer")
    key = keyset(settings_).key(str(header.get("kid", "")))
    if key is None:
        raise InvalidToken("the token is signed with a key the issuer does not publish")
    _verify(key, str(alg), f"{head}.{body}".encode(), _segment(signature))
    return _identity(claims, settings_, time.time() if now is None else now)


def _identity(claims: dict[str, Any], settings_: OidcConfig, now: float) -> Identity:
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if settings_.client_id not in audiences:
        raise InvalidToken("the token is for another audience")
    expiry = claims.get("exp")
    if not isinstance(expiry, int | float) or expiry <= now:
        raise InvalidToken("the token has expired")
    not_before = claims.get("nbf")
    if isinstance(not_before, int | float) and not_before > now:
        raise InvalidToken("the token is not valid yet")
    name = claims.get(settings_.username_claim)
    if not isinstance(name, str) or not name:
        raise InvalidToken(f"the token has no {settings_.username_claim!r} claim")
    if settings_.username_claim == "email" and claims.get("email_verified", True) is not True:
        raise InvalidToken("the token's email is not verified")
    username = settings_.username(name)
    if len(username) > MAX_NAME:
        raise InvalidToken("the username is too long")
    return Identity(username, _groups(claims, settings_), float(expiry))


def _groups(claims: dict[str, Any], settings_: OidcConfig) -> tuple[str, ...]:
    if not settings_.groups_claim:
        return ()
    value = claims.get(settings_.groups_claim, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or len(values) > MAX_GROUPS:
        raise InvalidToken(f"the {settings_.groups_claim!r} claim is not a list of groups")
    if not all(isinstance(group, str) for group in values):
        raise InvalidToken(f"the {settings_.groups_claim!r} claim holds a non-string")
    return tuple(sorted({settings_.group(group) for group in values}))


def account(identity: Identity) -> AbstractBaseUser | None:
    """The local user for `identity` (created on first sight), carrying its groups; None when
    an admin deactivated it."""
    model = get_user_model()
    user, created = model.objects.get_or_create(username=identity.username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    if not user.is_active:
        return None
    user.nodus_groups = identity.groups  # type: ignore[attr-defined]
    return user


# token digest -> (user with its groups, expiry); see accounts.memo.
_known = EpochMemo()


def remembered(key: str) -> AbstractBaseUser | None:
    known = _known.get(key)
    if known is not None and known[1] > time.time():
        return known[0]  # type: ignore[no-any-return]
    return None


def user_for(token: str, key: str) -> AbstractBaseUser | None:
    """The caller an ID token names (`key` is its digest), or None when it is refused."""
    settings_ = config()
    if settings_ is None:
        return None
    user = remembered(key)
    if user is not None:
        return user
    epoch = revocation.current()
    try:
        identity = verify(token, settings_)
    except InvalidToken as why:
        log.info("ID token refused: %s", why)
        return None
    user = account(identity)
    _known.put(key, (user, identity.expires_at) if user is not None else None, epoch)
    return user


def forget_keys() -> None:
    """Drops every provider's cached keys (a test's provider is new each time)."""
    _keysets.clear()
    _known.clear()


def claims(token: str) -> dict[str, Any]:
    """The claims of a token `verify` accepted (for the console's nonce check)."""
    return _json(token.split(".")[1])
