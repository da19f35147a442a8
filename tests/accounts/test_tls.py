"""The serving certificate of the HTTPS port: made once, kept while valid, remade when it must."""

from __future__ import annotations

import datetime
import ipaddress
import stat
from pathlib import Path

from cryptography import x509

from runtimes.accounts.tls import ensure_certificate


def names_in(cert_path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(n.value) for n in san]


def test_it_certifies_loopback_and_the_hosts_it_serves(tmp_path: Path) -> None:
    key, cert = ensure_certificate(tmp_path / "tls", ["nodus.example"])
    assert set(names_in(cert)) >= {"localhost", "nodus.example"}
    assert ipaddress.ip_address("127.0.0.1") in {
        ipaddress.ip_address(n) for n in names_in(cert) if n[0].isdigit()
    }
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_it_keeps_a_valid_certificate_and_remakes_one_for_a_new_host(tmp_path: Path) -> None:
    _, cert = ensure_certificate(tmp_path, ["a.example"])
    first = cert.read_bytes()
    _, again = ensure_certificate(tmp_path, ["a.example"])
    assert again.read_bytes() == first
    _, renamed = ensure_certificate(tmp_path, ["b.example"])
    assert renamed.read_bytes() != first
    assert "b.example" in names_in(renamed)


def test_it_remakes_a_certificate_about_to_expire(tmp_path: Path) -> None:
    _, cert = ensure_certificate(tmp_path, days=1)
    expiring = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc
    _, renewed = ensure_certificate(tmp_path)
    fresh = x509.load_pem_x509_certificate(renewed.read_bytes()).not_valid_after_utc
    assert fresh - expiring > datetime.timedelta(days=300)
