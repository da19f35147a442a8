"""The registry client against a real docker-registry (and loopback stubs for misbehaviour)."""

import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from runtimes.controller.oci.builder import DECOY_USER, build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.errors import (
    ContentTooLarge,
    DigestMismatch,
    ImageNotFound,
    RegistryRefused,
    Transient,
)
from runtimes.controller.oci.media import (
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_INDEX,
    OCI_MANIFEST,
)
from runtimes.controller.oci.reference import parse_reference
from tests.support.registry import RunningRegistry, stub_server

MIB = 1 << 20


def client_for(*hosts: str, **overrides: float | int) -> RegistryClient:
    return RegistryClient(RegistrySettings(allowed_registries=frozenset(hosts), **overrides))  # type: ignore[arg-type]


@pytest.fixture
def client(registry: RunningRegistry) -> Iterator[RegistryClient]:
    with client_for(registry.host) as opened:
        yield opened


def raw_manifest(running: RunningRegistry, repository: str, reference: str) -> bytes:
    """The manifest as the registry serves it, fetched without our client."""
    accept = ", ".join([OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST])
    response = httpx.get(
        f"http://{running.host}/v2/{repository}/manifests/{reference}", headers={"Accept": accept}
    )
    response.raise_for_status()
    return response.content


def sha256(content: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(content).hexdigest()


def test_it_pushes_and_resolves_an_oci_image(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    digest = build_image(client, registry.ref("team/sft:v1"), user="trainer")

    by_tag = client.resolve(registry.ref("team/sft:v1"))
    by_digest = client.resolve(registry.ref(f"team/sft@{digest}"))

    served = raw_manifest(registry, "team/sft", "v1")
    assert by_tag.digest == by_digest.digest == digest == sha256(served)
    assert by_tag.manifest == served
    assert (by_tag.user, by_tag.media_type) == ("trainer", OCI_MANIFEST)
    assert by_tag.config_digest == json.loads(served)["config"]["digest"]


def test_it_reads_root_when_the_config_names_no_user(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    build_image(client, registry.ref("team/nouser:v1"), user=None)
    assert client.resolve(registry.ref("team/nouser:v1")).user == "root"


@pytest.mark.parametrize(
    ("docker", "media_type"), [(False, OCI_INDEX), (True, DOCKER_MANIFEST_LIST)]
)
def test_it_picks_linux_amd64_from_an_index(
    client: RegistryClient,
    registry: RunningRegistry,
    docker: bool,
    media_type: str,
) -> None:
    ref = registry.ref(f"team/multi-{int(docker)}:v1")
    digest = build_image(client, ref, user="amd64-user", multi_arch=True, docker=docker)

    resolved = client.resolve(ref)

    index = json.loads(raw_manifest(registry, f"team/multi-{int(docker)}", "v1"))
    amd64 = next(m for m in index["manifests"] if m["platform"]["architecture"] == "amd64")
    assert index["manifests"][0]["platform"]["architecture"] != "amd64"  # not merely the first
    assert (resolved.digest, resolved.media_type) == (digest, media_type)
    assert resolved.platform_digest == amd64["digest"] != digest
    assert resolved.user == "amd64-user" != DECOY_USER


def test_it_resolves_docker_v2_schema2_manifests(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    digest = build_image(client, registry.ref("team/docker:v1"), user="1000:1000", docker=True)
    resolved = client.resolve(registry.ref(f"team/docker@{digest}"))
    assert (resolved.media_type, resolved.user) == (DOCKER_MANIFEST, "1000:1000")


def test_it_reports_missing_tags_repositories_and_digests_as_image_not_found(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    build_image(client, registry.ref("team/present:v1"))
    for missing in (
        "team/present:v2",
        "team/absent:v1",
        "team/present@sha256:" + "0" * 64,
    ):
        with pytest.raises(ImageNotFound) as caught:
            client.resolve(registry.ref(missing))
        assert caught.value.reason == "ImageNotFound"


def test_it_refuses_bytes_that_do_not_hash_to_the_pinned_digest(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    digest = build_image(client, registry.ref("team/tampered:v1"), user="trainer")
    hex_digest = digest.removeprefix("sha256:")
    # Corrupt the registry's own storage, as a compromised or buggy backend would.
    stored = (
        registry.storage / "docker/registry/v2/blobs/sha256" / hex_digest[:2] / hex_digest / "data"
    )
    manifest = json.loads(stored.read_bytes())
    manifest["annotations"] = {"evil": "yes"}
    stored.write_bytes(json.dumps(manifest).encode())

    with pytest.raises(DigestMismatch, match=digest):
        client.resolve(registry.ref(f"team/tampered@{digest}"))
    with pytest.raises(DigestMismatch):
        client.resolve(registry.ref("team/tampered:v1"))


def test_it_refuses_registries_off_the_allow_list_without_connecting() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with client_for("127.0.0.1:1") as client:
            with pytest.raises(RegistryRefused, match="allow-list") as caught:
                client.resolve(f"127.0.0.1:{port}/team/sft:v1")
            with pytest.raises(RegistryRefused):
                client.push_blob(parse_reference(f"127.0.0.1:{port}/team/sft"), b"x")
        assert caught.value.reason == "RegistryRefused"
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()


def test_it_refuses_manifests_over_the_configured_limit(
    client: RegistryClient,
    registry: RunningRegistry,
) -> None:
    build_image(client, registry.ref("team/big:base"))
    manifest = json.loads(raw_manifest(registry, "team/big", "base"))
    manifest["annotations"] = {"padding": "x" * 8192}
    content = json.dumps(manifest).encode()
    client.push_manifest(parse_reference(registry.ref("team/big:padded")), content, OCI_MANIFEST)

    with (
        client_for(registry.host, max_manifest_bytes=4096) as strict,
        pytest.raises(ContentTooLarge, match="4096"),
    ):
        strict.resolve(registry.ref("team/big:padded"))
    assert client.resolve(registry.ref("team/big:padded")).manifest == content


@pytest.mark.parametrize(("size", "refused"), [(4 * MIB, False), (4 * MIB + 1, True)])
def test_it_allows_manifests_up_to_four_mib_by_default(size: int, refused: bool) -> None:
    head = b'{"schemaVersion":2,"mediaType":"%s","config":{"mediaType":"x","size":2,' % (
        OCI_MANIFEST.encode()
    )
    head += b'"digest":"sha256:%s"},"layers":[],"annotations":{"p":"' % (b"0" * 64)
    body = head + b"x" * (size - len(head) - 3) + b'"}}'
    assert len(body) == size

    def serve(handler: BaseHTTPRequestHandler) -> None:
        if "/manifests/" not in handler.path:
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(200)
        handler.send_header("Content-Type", OCI_MANIFEST)
        handler.send_header("Transfer-Encoding", "chunked")  # no Content-Length to judge by
        handler.end_headers()
        for start in range(0, len(body), 65536):
            chunk = body[start : start + 65536]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.write(b"0\r\n\r\n")

    with stub_server(serve) as stub, client_for(stub.host) as client:
        expected = ContentTooLarge if refused else ImageNotFound  # the config is missing
        with pytest.raises(expected):
            client.resolve(f"{stub.host}/team/sized:v1")


def test_it_refuses_configs_over_the_limit_before_fetching_them(
    registry: RunningRegistry,
) -> None:
    with client_for(registry.host) as writer:
        build_image(writer, registry.ref("team/bigconfig:v1"), user="trainer")
    with (
        client_for(registry.host, max_config_bytes=64) as strict,
        pytest.raises(ContentTooLarge, match="image config"),
    ):
        strict.resolve(registry.ref("team/bigconfig:v1"))


def test_it_stops_reading_a_body_that_never_ends() -> None:
    sent = []

    def endless(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", OCI_MANIFEST)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b"x" * 65536
        for _ in range(10_000):  # 640 MiB if nobody hangs up
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent.append(len(chunk))

    with stub_server(endless) as stub, client_for(stub.host) as client:
        started = time.monotonic()
        with pytest.raises(ContentTooLarge, match="exceeds"):
            client.resolve(f"{stub.host}/team/endless:v1")
    assert time.monotonic() - started < 5
    assert sum(sent) < 64 * MIB


def test_it_refuses_a_declared_oversize_body_before_reading_it() -> None:
    def declares_five_mib(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", OCI_MANIFEST)
        handler.send_header("Content-Length", str(5 * MIB))
        handler.end_headers()
        handler.wfile.write(b"{")
        time.sleep(3)  # a reader that waited for the body would take this long

    with stub_server(declares_five_mib) as stub, client_for(stub.host) as client:
        started = time.monotonic()
        with pytest.raises(ContentTooLarge, match=str(5 * MIB)):
            client.resolve(f"{stub.host}/team/declared:v1")
        assert time.monotonic() - started < 2


def test_it_reports_a_stopped_registry_as_transient(
    stoppable_registry: RunningRegistry,
) -> None:
    with client_for(stoppable_registry.host) as client:
        build_image(client, stoppable_registry.ref("team/sft:v1"))
        stoppable_registry.stop()
        with pytest.raises(Transient) as caught:
            client.resolve(stoppable_registry.ref("team/sft:v1"))
    assert caught.value.reason == "RegistryUnavailable"


@pytest.mark.parametrize(("status", "retry_after"), [(503, None), (500, None), (429, 7.0)])
def test_it_treats_server_errors_and_throttling_as_transient(
    status: int, retry_after: float | None
) -> None:
    def failing(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        if retry_after:
            handler.send_header("Retry-After", str(int(retry_after)))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with (
        stub_server(failing) as stub,
        client_for(stub.host) as client,
        pytest.raises(Transient, match=str(status)) as caught,
    ):
        client.resolve(f"{stub.host}/team/sft:v1")
    assert caught.value.retry_after == retry_after


def test_it_times_out_on_a_registry_that_never_answers() -> None:
    def silent(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(3)

    with stub_server(silent) as stub, client_for(stub.host, timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(Transient):
            client.resolve(f"{stub.host}/team/sft:v1")
        assert time.monotonic() - started < 2


def test_it_uses_https_off_loopback_and_plain_http_on_loopback() -> None:
    # A host we cannot run here: record where the client would connect instead.
    seen: list[httpx.URL] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(404)

    settings = RegistrySettings(
        allowed_registries=frozenset({"registry.example.com", "localhost:5"})
    )
    with RegistryClient(settings, transport=httpx.MockTransport(record)) as client:
        for ref in ("registry.example.com/team/sft:v1", "localhost:5/team/sft:v1"):
            with pytest.raises(ImageNotFound):
                client.resolve(ref)
    assert [(url.scheme, url.host) for url in seen] == [
        ("https", "registry.example.com"),
        ("http", "localhost"),
    ]


def test_it_reuses_blobs_the_registry_already_has(
    client: RegistryClient,
    registry: RunningRegistry,
    tmp_path: Path,
) -> None:
    ref = parse_reference(registry.ref("team/blobs"))
    digest = client.push_blob(ref, b"layer bytes")
    assert digest == sha256(b"layer bytes")
    assert client.push_blob(ref, b"layer bytes") == digest
    assert client.fetch_blob(ref, digest, 100) == b"layer bytes"
    with pytest.raises(ContentTooLarge):
        client.fetch_blob(ref, digest, 5)
