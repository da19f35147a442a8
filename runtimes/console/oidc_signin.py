"""Signing in to the console with the company's OpenID provider: authorization code + PKCE.

Authlib builds the protocol's messages (the authorize URL, the S256 code challenge, the token
request); the HTTP call to the token endpoint is ours, with the same time and size limits as
every call to the provider, and the ID token it returns is checked by `accounts.oidc.verify`,
the check API bearer tokens get, plus the nonce of this sign-in. The state, nonce and code
verifier live in the session between the two steps and are used once.
"""

from __future__ import annotations

import logging
import secrets

import httpx
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from django.conf import settings
from django.contrib.auth import login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from runtimes.accounts import oidc
from runtimes.accounts.oidcconfig import OidcConfig, config
from runtimes.accounts.oidckeys import ProviderError, allowed_url
from runtimes.accounts.oidcsession import SESSION_GROUPS

log = logging.getLogger("nodus.oidc")
PENDING = "nodus_oidc_pending"


def _config() -> OidcConfig:
    found = config()
    if found is None:
        raise Http404("OpenID Connect is not configured")
    return found


def _callback_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("oidc-callback"))


def start(request: HttpRequest) -> HttpResponse:
    """Sends the browser to the provider with a fresh state, nonce and PKCE challenge."""
    settings_ = _config()
    try:
        endpoint = oidc.keyset(settings_).endpoint("authorization_endpoint")
    except ProviderError:
        log.warning("the OIDC provider's discovery failed", exc_info=True)
        return HttpResponse("The identity provider cannot be reached.", status=502)
    pending = {
        "state": secrets.token_urlsafe(24),
        "nonce": secrets.token_urlsafe(24),
        "verifier": secrets.token_urlsafe(48),
        "next": request.GET.get("next", ""),
    }
    request.session[PENDING] = pending
    url = prepare_grant_uri(
        endpoint,
        settings_.client_id,
        "code",
        redirect_uri=_callback_url(request),
        scope=settings.NODUS_OIDC_SCOPES,
        state=pending["state"],
        nonce=pending["nonce"],
        code_challenge=create_s256_code_challenge(pending["verifier"]),
        code_challenge_method="S256",
    )
    return HttpResponseRedirect(url)


def _exchange(settings_: OidcConfig, request: HttpRequest, code: str, verifier: str) -> str:
    """The ID token the token endpoint gives for `code`."""
    endpoint = oidc.keyset(settings_).endpoint("token_endpoint")
    if not allowed_url(endpoint):
        raise ProviderError("the token endpoint is not https")
    body = prepare_token_request(
        "authorization_code",
        code=code,
        redirect_uri=_callback_url(request),
        client_id=settings_.client_id,
        code_verifier=verifier,
    )
    # A confidential client authenticates with HTTP Basic; a public one with PKCE alone.
    auth: httpx.Auth = (
        httpx.BasicAuth(settings_.client_id, settings_.client_secret)
        if settings_.client_secret
        else httpx.FunctionAuth(lambda request: request)
    )
    try:
        with httpx.Client(timeout=settings_.fetch_timeout, verify=settings_.verify) as client:
            response = client.post(
                endpoint,
                content=body,
                auth=auth,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
    except httpx.HTTPError as error:
        raise ProviderError(f"the token endpoint: {error}") from error
    if response.status_code != 200 or len(response.content) > settings_.max_document_bytes:
        raise ProviderError(f"the token endpoint answered {response.status_code}")
    try:
        token = response.json().get("id_token")
    except (ValueError, AttributeError) as error:
        raise ProviderError("the token endpoint did not answer JSON") from error
    if not isinstance(token, str):
        raise ProviderError("the token endpoint gave no ID token")
    return token


def callback(request: HttpRequest) -> HttpResponse:
    """Checks the state, exchanges the code, checks the ID token and its nonce, signs in."""
    settings_ = _config()
    pending = request.session.pop(PENDING, None)
    if not isinstance(pending, dict) or request.GET.get("state") != pending.get("state"):
        raise PermissionDenied("This sign-in was not started here, or was already used.")
    code = request.GET.get("code", "")
    if not code:
        raise PermissionDenied("The identity provider refused the sign-in.")
    try:
        token = _exchange(settings_, request, code, str(pending["verifier"]))
        identity = oidc.verify(token, settings_)
        if oidc.claims(token).get("nonce") != pending["nonce"]:
            raise oidc.InvalidToken("the nonce does not match this sign-in")
    except (ProviderError, oidc.InvalidToken) as why:
        log.info("OIDC sign-in refused: %s", why)
        raise PermissionDenied("The identity provider's answer could not be verified.") from why
    user = oidc.account(identity)
    if user is None:
        raise PermissionDenied("This account is deactivated.")
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # type: ignore[arg-type]
    request.session[SESSION_GROUPS] = list(identity.groups)
    target = str(pending.get("next") or "")
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("catalog")
    return HttpResponseRedirect(target)
