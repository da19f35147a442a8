"""An OCI distribution v2 client: resolve, fetch and push over HTTP(S) with httpx.

Safety rules the controller relies on: registries off the allow-list are refused before any
connection; plain HTTP is used only for loopback hosts; manifests and blobs are read as streams
and abandoned as soon as they pass the size limit; every byte received is checked against the
digest it was asked for.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType

import httpx

from runtimes.controller.oci.auth import (
    Challenge,
    Credential,
    fetch_token,
    is_loopback,
    parse_www_authenticate,
    split_host,
)
from runtimes.controller.oci.errors import (
    ContentTooLarge,
    DigestMismatch,
    ImageError,
    ImageNotFound,
    ManifestInvalid,
    RegistryRefused,
    RegistryUnauthorized,
    RegistryUnavailable,
)
from runtimes.controller.oci.images import (
    FetchedManifest,
    ResolvedImage,
    as_reference,
    resolve_image,
)
from runtimes.controller.oci.media import (
    ACCEPT_MANIFESTS,
    DEFAULT_MAX_CONFIG_BYTES,
    DEFAULT_MAX_MANIFEST_BYTES,
    check_digest,
    manifest_media_type,
    sha256_digest,
)
from runtimes.controller.oci.reference import ImageReference
from runtimes.registry.trainingruntime.images import HUB_ALIASES, allowed

MAX_REDIRECTS = 5


@dataclass(frozen=True)
class RegistrySettings:
    """Plain values from the project's settings; no Django here."""

    allowed_registries: frozenset[str]  # host[:port] as written in references; "*" admits any
    credentials: Mapping[str, Credential] = field(default_factory=dict)
    timeout: float = 10.0  # seconds, per connect/read and for a whole body
    max_manifest_bytes: int = DEFAULT_MAX_MANIFEST_BYTES
    max_config_bytes: int = DEFAULT_MAX_CONFIG_BYTES
    user_agent: str = "nodus-console-controller"

    def allows(self, registry: str) -> bool:
        return allowed(registry, self.allowed_registries)

    def credential_for(self, registry: str) -> Credential | None:
        wanted = {registry.lower()} | (HUB_ALIASES if registry.lower() in HUB_ALIASES else set())
        for key, credential in self.credentials.items():
            if key.lower() in wanted:
                return credential
        return None


class RegistryClient:
    """An ``ImageSource`` backed by OCI distribution registries (any number of them)."""

    def __init__(self, settings: RegistrySettings, *, transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self.max_manifest_bytes = settings.max_manifest_bytes
        self.max_config_bytes = settings.max_config_bytes
        self._http = httpx.Client(
            timeout=httpx.Timeout(settings.timeout),
            headers={"User-Agent": settings.user_agent},
            follow_redirects=False,
            transport=transport,
        )
        # Authorization header per (registry, repository, access); Basic ones are reused freely.
        self._authorization: dict[tuple[str, str, str], str] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- ImageSource --------------------------------------------------------------------------

    def resolve(self, ref: ImageReference | str) -> ResolvedImage:
        return resolve_image(self, ref)

    def fetch_manifest(self, ref: ImageReference) -> FetchedManifest:
        ref = as_reference(ref)
        path = f"/manifests/{ref.reference}"
        with self._stream(ref, "GET", path, headers={"Accept": ACCEPT_MANIFESTS}) as response:
            if response.status_code == 404:
                raise ImageNotFound(f"manifest {ref.reference} not found in {ref.name}")
            self._expect(response, ref, (200,))
            content = self._read_limited(response, self.max_manifest_bytes, f"manifest of {ref}")
            declared = response.headers.get("Content-Type")
            header_digest = response.headers.get("Docker-Content-Digest")
        digest = sha256_digest(content)
        if ref.digest:
            check_digest(content, ref.digest, f"manifest of {ref}")
        elif header_digest and header_digest.startswith("sha256:") and header_digest != digest:
            raise DigestMismatch(
                f"manifest of {ref}: registry says {header_digest}, content hashes to {digest}"
            )
        return FetchedManifest(digest, manifest_media_type(content, declared), content)

    def fetch_blob(self, ref: ImageReference, digest: str, max_bytes: int) -> bytes:
        path = f"/blobs/{digest}"
        with self._stream(ref, "GET", path) as response:
            for _ in range(MAX_REDIRECTS):
                if response.status_code not in (301, 302, 303, 307, 308):
                    break
                # Registries hand blobs to storage backends on other hosts; follow without our
                # Authorization header, and never to plain HTTP off loopback.
                target = response.url.join(response.headers.get("Location", ""))
                response.close()
                if target.scheme != "https" and not (
                    target.scheme == "http" and is_loopback(target.host)
                ):
                    raise RegistryRefused(f"blob {digest} redirects to insecure {target}")
                response = self._send_raw(self._http.build_request("GET", target), ref)
            if response.status_code == 404:
                response.close()
                raise ImageNotFound(f"blob {digest} not found in {ref.name}")
            try:
                self._expect(response, ref, (200,))
                content = self._read_limited(response, max_bytes, f"blob {digest} of {ref.name}")
            finally:
                response.close()
        check_digest(content, digest, f"blob of {ref.name}")
        return content

    def push_blob(self, ref: ImageReference, content: bytes) -> str:
        digest = sha256_digest(content)
        with self._stream(ref, "HEAD", f"/blobs/{digest}", access="pull,push") as response:
            if response.status_code == 200:
                return digest
        with self._stream(ref, "POST", "/blobs/uploads/", access="pull,push") as response:
            self._expect(response, ref, (202,))
            location = response.headers.get("Location", "")
        upload = httpx.URL(self._base(ref)).join(location)
        if (upload.scheme, upload.host, upload.port) != self._origin(ref):
            raise RegistryRefused(f"upload location {upload} leaves {ref.registry}")
        upload = upload.copy_merge_params({"digest": digest})
        headers = {"Content-Type": "application/octet-stream"}
        with self._stream(
            ref, "PUT", upload, access="pull,push", headers=headers, content=content
        ) as response:
            self._expect(response, ref, (201, 204))
        return digest

    def push_manifest(self, ref: ImageReference, content: bytes, media_type: str) -> str:
        digest = sha256_digest(content)
        path = f"/manifests/{ref.tag or digest}"
        headers = {"Content-Type": media_type}
        with self._stream(
            ref, "PUT", path, access="pull,push", headers=headers, content=content
        ) as response:
            if response.status_code == 400:
                raise ManifestInvalid(f"{ref.name} refused the manifest: {response.read()[:300]!r}")
            self._expect(response, ref, (201, 204))
            stored = response.headers.get("Docker-Content-Digest")
        if stored and stored != digest:
            raise DigestMismatch(f"registry stored the manifest as {stored}, we sent {digest}")
        return digest

    # -- transport ------------------------------------------------------------------------------

    def _base(self, ref: ImageReference) -> str:
        host = ref.api_host
        scheme = "http" if is_loopback(split_host(host)) else "https"
        return f"{scheme}://{host}/v2/{ref.repository}"

    def _origin(self, ref: ImageReference) -> tuple[str, str, int | None]:
        url = httpx.URL(self._base(ref))
        return url.scheme, url.host, url.port

    @contextmanager
    def _stream(
        self,
        ref: ImageReference,
        method: str,
        path: str | httpx.URL,
        *,
        access: str = "pull",
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> Iterator[httpx.Response]:
        """Sends with auth (answering one challenge), yields the streaming response."""
        if not self.settings.allows(ref.registry):
            raise RegistryRefused(f"registry {ref.registry} is not on the allow-list")
        url = path if isinstance(path, httpx.URL) else httpx.URL(self._base(ref) + path)
        key = (ref.registry.lower(), ref.repository, access)
        response: httpx.Response | None = None
        try:
            for attempt in range(2):
                request = self._http.build_request(method, url, headers=headers, content=content)
                if key in self._authorization:
                    request.headers["Authorization"] = self._authorization[key]
                response = self._send_raw(request, ref)
                if response.status_code != 401 or attempt == 1:
                    break
                challenge = response.headers.get("WWW-Authenticate", "")
                response.close()
                self._authorization[key] = self._answer(
                    ref, access, parse_www_authenticate(challenge)
                )
            assert response is not None
            if response.status_code == 401:
                raise RegistryUnauthorized(
                    f"{ref.registry} refused access to {ref.name} ({access})"
                )
            if response.status_code == 403:
                raise RegistryUnauthorized(f"{ref.registry} forbids {access} on {ref.name}")
            yield response
        finally:
            if response is not None:
                response.close()

    def _send_raw(self, request: httpx.Request, ref: ImageReference) -> httpx.Response:
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise RegistryUnavailable(f"{ref.registry}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = _retry_after(response.headers.get("Retry-After"))
            response.close()
            raise RegistryUnavailable(
                f"{ref.registry} answered {response.status_code}", retry_after=retry_after
            )
        return response

    def _answer(self, ref: ImageReference, access: str, challenges: list[Challenge]) -> str:
        credential = self.settings.credential_for(ref.registry)
        by_scheme = {challenge.scheme: challenge for challenge in challenges}
        if "bearer" in by_scheme:
            bearer = by_scheme["bearer"]
            scopes = [f"repository:{ref.repository}:{access}", bearer.params.get("scope", "")]
            return "Bearer " + fetch_token(self._http, bearer, scopes, credential)
        if "basic" in by_scheme:
            if credential is None:
                raise RegistryUnauthorized(f"{ref.registry} wants a password and none is set")
            return credential.basic_header()
        raise RegistryUnauthorized(f"{ref.registry} answered 401 with no usable challenge")

    def _expect(self, response: httpx.Response, ref: ImageReference, ok: tuple[int, ...]) -> None:
        if response.status_code not in ok:
            body = response.read()[:300]
            raise ImageError(f"{ref.registry} answered {response.status_code}: {body!r}")

    def _read_limited(self, response: httpx.Response, limit: int, what: str) -> bytes:
        declared = response.headers.get("Content-Length")
        if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise ContentTooLarge(f"{what} is {declared} bytes, over the {limit} byte limit")
        deadline = time.monotonic() + self.settings.timeout
        chunks: list[bytes] = []
        received = 0
        try:
            for chunk in response.iter_bytes():
                received += len(chunk)
                if received > limit:
                    raise ContentTooLarge(f"{what} exceeds the {limit} byte limit")
                if time.monotonic() > deadline:
                    raise RegistryUnavailable(f"{what}: body not received within the timeout")
                chunks.append(chunk)
        except httpx.TransportError as exc:
            raise RegistryUnavailable(f"{what}: {type(exc).__name__}: {exc}") from exc
        return b"".join(chunks)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
