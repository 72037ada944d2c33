"""Tests for ``rafka certs`` (rafka.cli.certs): a development CA whose broker certificate names the
hosts, keystores readable by their owner only, and a printout of the settings that use them."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID

from rafka.cli.certs import make_certs
from rafka.cli.main import main

pytestmark = pytest.mark.timeout(60)


def certificates(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def test_the_broker_certificate_is_signed_by_the_ca_for_every_host(tmp_path: Path) -> None:
    files = make_certs(tmp_path / "certs", ["localhost", "127.0.0.1", "kafka.example"], 30)
    (ca,) = certificates(files.ca)
    broker, chained_ca = certificates(files.broker)
    broker.verify_directly_issued_by(ca)
    assert chained_ca == ca
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "kafka.example"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lifetime = broker.not_valid_after_utc - broker.not_valid_before_utc
    assert 30 <= lifetime.days <= 31
    assert b"PRIVATE KEY" in files.broker.read_bytes()
    assert b"PRIVATE KEY" not in files.ca.read_bytes()
    assert files.client is None


def test_key_files_are_owner_only_even_when_they_existed_wider(tmp_path: Path) -> None:
    (tmp_path / "broker.pem").write_text("old")
    (tmp_path / "broker.pem").chmod(0o644)
    files = make_certs(tmp_path, ["localhost"], 1, client=True)
    assert files.client is not None
    for secret in (files.broker, files.client):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.ca.stat().st_mode) == 0o644


def test_the_client_certificate_is_for_client_authentication(tmp_path: Path) -> None:
    files = make_certs(tmp_path, ["localhost"], 1, client=True)
    assert files.client is not None
    (ca,) = certificates(files.ca)
    client, _ = certificates(files.client)
    client.verify_directly_issued_by(ca)
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_two_runs_make_two_unrelated_cas(tmp_path: Path) -> None:
    first = make_certs(tmp_path / "a", ["localhost"], 1)
    second = make_certs(tmp_path / "b", ["localhost"], 1)
    broker, _ = certificates(second.broker)
    (other_ca,) = certificates(first.ca)
    with pytest.raises(InvalidSignature):
        broker.verify_directly_issued_by(other_ca)


def test_the_command_prints_its_files_and_the_broker_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "certs"
    assert main(["certs", "--out", str(out), "--hosts", "localhost", "--client"]) == 0
    printed = capsys.readouterr().out
    assert f"ssl_keystore_location={out / 'broker.pem'}" in printed
    assert f"ssl_truststore_location={out / 'ca.pem'}" in printed
    assert "ssl_client_auth=required" in printed
    assert sorted(p.name for p in out.iterdir()) == ["broker.pem", "ca.pem", "client.pem"]


@pytest.mark.parametrize(
    ("arguments", "named"), [(["--hosts", ","], "--hosts"), (["--days", "0"], "--days")]
)
def test_bad_arguments_are_one_line_errors(
    tmp_path: Path, arguments: list[str], named: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["certs", "--out", str(tmp_path), *arguments])
    assert str(exited.value.code).startswith(f"Error: {named}")
