"""OpenID Connect settings, read once, with kube-apiserver's meaning for each `--oidc-*` flag.

`NODUS_OIDC_ISSUER_URL` turns OIDC on (`--oidc-issuer-url`); `NODUS_OIDC_CLIENT_ID` is the
audience an ID token must carry (`--oidc-client-id`). The username claim defaults to `sub`, and
a username from any claim but `email` is prefixed with the issuer URL and `#` unless a prefix is
set (`-` sets none), as kube does, so a provider's users never pass for local accounts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str = ""
    username_claim: str = "sub"
    username_prefix: str = ""
    groups_claim: str = "groups"
    groups_prefix: str = ""
    ca_file: str = ""
    refresh_seconds: float = 10.0
    fetch_timeout: float = 5.0
    max_document_bytes: int = 256 * 1024
    max_token_bytes: int = 16 * 1024

    @property
    def verify(self) -> str | bool:
        return self.ca_file or True

    def username(self, claim_value: str) -> str:
        if self.username_prefix == "-":
            return claim_value
        if self.username_prefix:
            return self.username_prefix + claim_value
        if self.username_claim == "email":
            return claim_value
        return f"{self.issuer}#{claim_value}"

    def group(self, name: str) -> str:
        return self.groups_prefix + name


@functools.cache
def config() -> OidcConfig | None:
    """The configured provider, or None when OIDC is off."""
    issuer = settings.NODUS_OIDC_ISSUER_URL
    if not issuer:
        return None
    return OidcConfig(
        issuer=issuer,
        client_id=settings.NODUS_OIDC_CLIENT_ID,
        client_secret=settings.NODUS_OIDC_CLIENT_SECRET,
        username_claim=settings.NODUS_OIDC_USERNAME_CLAIM,
        username_prefix=settings.NODUS_OIDC_USERNAME_PREFIX,
        groups_claim=settings.NODUS_OIDC_GROUPS_CLAIM,
        groups_prefix=settings.NODUS_OIDC_GROUPS_PREFIX,
        ca_file=settings.NODUS_OIDC_CA_FILE,
        refresh_seconds=settings.NODUS_OIDC_REFRESH_SECONDS,
        fetch_timeout=settings.NODUS_OIDC_FETCH_TIMEOUT,
        max_document_bytes=settings.NODUS_OIDC_MAX_DOCUMENT_BYTES,
    )
