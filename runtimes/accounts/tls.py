"""A self-signed serving certificate for the embedded default's HTTPS port.

client-go sends bearer tokens only over TLS, so kubectl needs HTTPS even on loopback; the
kubeconfig embeds this certificate as its own CA (`certificate-authority-data`).
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from runtimes.accounts.privatefiles import private_dir, tighten, write_private

KEY_FILE, CERT_FILE = "tls.key", "tls.crt"


def _names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(["localhost", "127.0.0.1", *hosts]):
        if host in {"", "0.0.0.0", "::"}:  # noqa: S104  (wildcards are not names to certify)
            continue
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def ensure_certificate(
    folder: Path, hosts: list[str] | None = None, days: int = 365
) -> tuple[Path, Path]:
    """Returns (key, cert) in `folder`, creating them unless a valid pair for `hosts` exists."""
    private_dir(folder)
    key_path, cert_path = folder / KEY_FILE, folder / CERT_FILE
    tighten(key_path)
    names = _names(hosts or [])
    now = datetime.datetime.now(datetime.UTC)
    if key_path.exists() and cert_path.exists():
        existing = x509.load_pem_x509_certificate(cert_path.read_bytes())
        san = existing.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if existing.not_valid_after_utc > now + datetime.timedelta(days=1) and all(
            n in san for n in names
        ):
            return key_path, cert_path
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nodus console")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_private(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path
