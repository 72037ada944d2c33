"""``rafka certs --out DIR [--hosts localhost,127.0.0.1] [--days 365] [--client]``: a throwaway CA
and the certificates a development cluster's SSL listeners need, made with ``cryptography``.

It writes ``ca.pem`` (the CA certificate: the brokers' ``ssl_truststore_location`` and the clients'
``ssl_cafile`` / ``ssl.ca.location``), ``broker.pem`` (the brokers' private key, certificate and
the CA's: ``ssl_keystore_location``, one PEM keystore as Kafka's ``ssl.keystore.type=PEM`` reads
it) and with ``--client`` ``client.pem`` (a client's key and certificate, for
``ssl_client_auth=required``). Files holding a private key are written readable by their owner only
(0600). The CA's own key is never written, so no further certificate can be signed with it: run
the command again for a new set. Nothing here is fit for production, where certificates come from
a real CA.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rafka.cluster.secret_file import SECRET_MODE

CA_FILE = "ca.pem"
BROKER_FILE = "broker.pem"
CLIENT_FILE = "client.pem"
# Certificates start a few minutes in the past, so a client whose clock is slightly behind the
# machine that made them still accepts them.
CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class CertFiles:
    """The files ``make_certs`` wrote: CA certificate, broker keystore, client keystore if any."""

    ca: Path
    broker: Path
    client: Path | None


@dataclass(frozen=True)
class _Issued:
    """A private key and its certificate."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``rafka certs``."""
    parser.add_argument(
        "--out", type=Path, required=True, help="directory to write the PEM files into"
    )
    parser.add_argument(
        "--hosts",
        default="localhost,127.0.0.1",
        metavar="H1,H2",
        help="names and addresses clients reach the brokers by: the broker certificate's SANs",
    )
    parser.add_argument("--days", type=int, default=365, help="how long the certificates are valid")
    parser.add_argument(
        "--client",
        action="store_true",
        help="also write client.pem, a CA-signed client certificate for ssl_client_auth=required",
    )


def run(args: argparse.Namespace) -> int:
    """Write the files and print them with the settings that use them."""
    hosts = [host.strip() for host in args.hosts.split(",") if host.strip()]
    if not hosts:
        raise SystemExit("--hosts: name at least one host the brokers are reached by")
    if args.days < 1:
        raise SystemExit(f"--days: {args.days} is not a positive number of days")
    files = make_certs(args.out.resolve(), hosts, args.days, args.client)
    print(f"wrote {files.ca}: the CA certificate (ssl_truststore_location; a client's CA file)")
    print(f"wrote {files.broker}: the broker's key and certificate chain (ssl_keystore_location)")
    if files.client is not None:
        print(f"wrote {files.client}: a client's key and certificate chain")
    print("broker settings (rafka up --broker-config KEY=VALUE, or LocalCluster's broker_config):")
    print("  listeners=PLAINTEXT://:0,SSL://:0")
    print(f"  ssl_keystore_location={files.broker}")
    if files.client is not None:
        print(f"  ssl_truststore_location={files.ca}")
        print("  ssl_client_auth=required")
    print(f"clients: security_protocol=SSL, ssl_cafile={files.ca} (kafka-python);")
    print(f"  security.protocol=SSL, ssl.ca.location={files.ca} (confluent-kafka)")
    return 0


def make_certs(out: Path, hosts: list[str], days: int, client: bool = False) -> CertFiles:
    """Make a CA, a broker certificate for ``hosts`` and optionally a client certificate, valid for
    ``days``, and write them into ``out`` (created if missing)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = _issue_ca(now, days)
    broker = _issue(
        ca,
        hosts[0],
        now,
        days,
        ExtendedKeyUsageOID.SERVER_AUTH,
        x509.SubjectAlternativeName([_general_name(host) for host in hosts]),
    )
    out.mkdir(parents=True, exist_ok=True)
    files = CertFiles(out / CA_FILE, out / BROKER_FILE, out / CLIENT_FILE if client else None)
    _write(files.ca, _cert_pem(ca.cert), secret=False)
    _write(files.broker, _keystore_pem(broker, ca), secret=True)
    if files.client is not None:
        issued = _issue(ca, "rafka-client", now, days, ExtendedKeyUsageOID.CLIENT_AUTH)
        _write(files.client, _keystore_pem(issued, ca), secret=True)
    return files


def _issue_ca(now: datetime.datetime, days: int) -> _Issued:
    """A self-signed CA that may sign leaf certificates only."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rafka development CA")])
    cert = (
        _builder(name, name, key.public_key(), now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return _Issued(key, cert)


def _issue(
    ca: _Issued,
    common_name: str,
    now: datetime.datetime,
    days: int,
    usage: x509.ObjectIdentifier,
    names: x509.SubjectAlternativeName | None = None,
) -> _Issued:
    """A leaf certificate for ``usage`` (server or client authentication), signed by ``ca``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        _builder(subject, ca.cert.subject, key.public_key(), now, days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if names is not None:
        builder = builder.add_extension(names, critical=False)
    return _Issued(key, builder.sign(ca.key, hashes.SHA256()))


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    days: int,
) -> x509.CertificateBuilder:
    """A certificate's common part: names, key, serial and validity."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _general_name(host: str) -> x509.GeneralName:
    """An IP address SAN for an address, a DNS name SAN for anything else."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _keystore_pem(issued: _Issued, ca: _Issued) -> bytes:
    """A PEM keystore: the unencrypted private key, its certificate, then the CA's."""
    key = issued.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return key + _cert_pem(issued.cert) + _cert_pem(ca.cert)


def _write(path: Path, data: bytes, secret: bool) -> None:
    """Write ``path``; one holding a key is created, or narrowed if it existed, to 0600 before any
    byte of it is written."""
    mode = SECRET_MODE if secret else 0o644
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(file.fileno(), mode)
        file.write(data)
