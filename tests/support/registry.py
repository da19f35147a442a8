"""Real local registries for tests: Debian's docker-registry, anonymous, htpasswd or token auth.

The fixtures that start them live in tests/controller/conftest.py. Each registry runs on a free
loopback port with its own config and storage in a temp folder; the token variant comes with a
small token server that signs ES256 JWTs with a throwaway key. ``stub_server`` answers GETs
with whatever a test wants, for registry misbehaviour docker-registry cannot produce.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

from tests.support.ports import free_port

REGISTRY_BINARY = Path("/usr/bin/docker-registry")
USERNAME = "alice"
TOKEN_SERVICE = "nodus-test-registry"
TOKEN_ISSUER = "nodus-test-issuer"


@dataclass
class RunningRegistry:
    host: str  # 127.0.0.1:PORT, as written in image references
    storage: Path
    process: subprocess.Popen[bytes]
    password: str | None = None

    def ref(self, name: str) -> str:
        return f"{self.host}/{name}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_registry(folder: Path, auth: dict[str, Any] | None = None) -> RunningRegistry:
    """Starts docker-registry with a config of our own (the packaged one demands htpasswd)."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config: dict[str, Any] = {
        "version": 0.1,
        "log": {"level": "error", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(folder / "storage")}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    if auth:
        config["auth"] = auth
    # JSON is YAML, and saves a YAML dependency here.
    (folder / "config.yml").write_text(json.dumps(config))
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen(
        [str(REGISTRY_BINARY), "serve", str(folder / "config.yml")], stdout=log, stderr=log
    )
    running = RunningRegistry(host=f"127.0.0.1:{port}", storage=folder / "storage", process=process)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"docker-registry exited: {(folder / 'registry.log').read_text()}")
        try:
            httpx.get(f"http://{running.host}/v2/", timeout=1)
            return running
        except httpx.TransportError:
            time.sleep(0.05)
    running.stop()
    raise RuntimeError("docker-registry did not start within 15 s")


def restart(running: RunningRegistry) -> None:
    """Starts docker-registry again with the same config: same port, same storage."""
    folder = running.storage.parent
    log = (folder / "registry.log").open("ab")
    running.process = subprocess.Popen(
        [str(REGISTRY_BINARY), "serve", str(folder / "config.yml")], stdout=log, stderr=log
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://{running.host}/v2/", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("docker-registry did not come back")


def htpasswd_line(username: str, password: str) -> str:
    """A bcrypt htpasswd entry (docker-registry accepts bcrypt only)."""
    try:
        import bcrypt  # optional: apache2-utils' htpasswd otherwise
    except ImportError:
        result = subprocess.run(
            ["htpasswd", "-nbB", username, password], capture_output=True, check=True, text=True
        )
        return result.stdout.strip()
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()
    return f"{username}:{hashed}"


@dataclass
class TokenServer:
    """Issues registry tokens: every requested action to alice, nothing to anyone else."""

    password: str
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def certificate_pem(self) -> bytes:
        return self._certificate().public_bytes(serialization.Encoding.PEM)

    def _certificate(self) -> x509.Certificate:
        if not hasattr(self, "_cert"):
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, TOKEN_ISSUER)])
            now = datetime.now(UTC)
            self._cert = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(self.key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - timedelta(minutes=5))
                .not_valid_after(now + timedelta(hours=2))
                .sign(self.key, hashes.SHA256())
            )
        return self._cert

    def issue(self, query: dict[str, list[str]], authorization: str | None) -> dict[str, Any]:
        authenticated = authorization == "Basic " + base64.b64encode(
            f"{USERNAME}:{self.password}".encode()
        ).decode("ascii")
        self.requests.append({"query": query, "authenticated": authenticated})
        access = []
        for scope in query.get("scope", []):
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            if authenticated:
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        claims = {
            "iss": TOKEN_ISSUER,
            "sub": USERNAME if authenticated else "",
            "aud": query.get("service", [""])[0],
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now - 10,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        der_cert = self._certificate().public_bytes(serialization.Encoding.DER)
        header = {"typ": "JWT", "alg": "ES256", "x5c": [base64.b64encode(der_cert).decode()]}
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        r, s = decode_dss_signature(
            self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        )
        token = f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
        return {"token": token, "expires_in": 300}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def serve_token_server(server: TokenServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            body = json.dumps(
                server.issue(parse_qs(parsed.query), self.headers.get("Authorization"))
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/token"
    return httpd


@dataclass
class StubServer:
    """A loopback HTTP server whose every GET is answered by ``respond``; records the paths."""

    host: str
    paths: list[str]


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up early is the point of several tests


@contextmanager
def stub_server(respond: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[StubServer]:
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            paths.append(self.path)
            # The client hanging up mid-body is what some tests want.
            with suppress(BrokenPipeError, ConnectionResetError):
                respond(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = QuietServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield StubServer(host=f"127.0.0.1:{httpd.server_address[1]}", paths=paths)
    finally:
        httpd.shutdown()
        httpd.server_close()
