"""The stack's own certificate authority for TLS listeners (`dcdrill:cluster.tls`); the SASL
users' passwords are infra/passwords.py's.

One CA per stack, and a certificate per broker naming what clients and other brokers dial: the
broker's DNS name (the one in advertised.listeners), and its address where the inventory has one
(the lab; on AWS ansible_host is an instance id, and the Route 53 name is what clients dial).
Kafka reads PEM key stores
directly (KIP-651), so the files are plain PEM:
  ca.pem, ca.key         the CA (the key never leaves the controller)
  <broker>.pem           the broker's private key (PKCS#8) and its certificate chain
Files that exist and still name the right host are kept, so a second `lab up` changes nothing.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 825  # the longest validity common TLS stacks accept for a leaf


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dcdrill"), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )


def _pem_key(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _address(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _cert(subject: str, key, issuer: x509.Name, signer, ca: bool, names: tuple[str, str | None] | None = None):
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
    )
    if ca:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        dns, address = names
        alt = [x509.DNSName(dns)] + ([x509.IPAddress(ipaddress.ip_address(address))] if address else [])
        b = b.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        # Brokers are TLS clients of each other on the REPLICATION listener, and servers on both.
        b = b.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return b.sign(signer, hashes.SHA256())


def _ca(directory: Path, cluster: str):
    key_path, cert_path = directory / "ca.key", directory / "ca.pem"
    if key_path.exists() and cert_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        return key, x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = _key()
    cert = _cert(f"dcdrill CA {cluster}", key, _name(f"dcdrill CA {cluster}"), key, ca=True)
    key_path.write_bytes(_pem_key(key))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert


def names_in(pem: bytes) -> tuple[str, str | None] | None:
    """(DNS name, address or None) a broker's certificate is for; None without a DNS name."""
    try:
        san = x509.load_pem_x509_certificate(pem).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return None
    dns, ips = san.get_values_for_type(x509.DNSName), san.get_values_for_type(x509.IPAddress)
    return (dns[0], str(ips[0]) if ips else None) if dns else None


def ensure(directory: Path, cluster: str, brokers: dict[str, str]) -> Path:
    """The CA and a key store per broker ({DNS name: ansible_host}) in `directory`; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    ca_key, ca_cert = _ca(directory, cluster)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    for name, host in sorted(brokers.items()):
        address = _address(host)
        path = directory / f"{name}.pem"
        if path.exists() and names_in(path.read_bytes()) == (name, address) and path.read_bytes().endswith(ca_pem):
            continue
        key = _key()
        cert = _cert(name, key, ca_cert.subject, ca_key, ca=False, names=(name, address))
        path.write_bytes(_pem_key(key) + cert.public_bytes(serialization.Encoding.PEM) + ca_pem)
        path.chmod(0o600)
    return directory


def principal(broker: str) -> str:
    """The principal Kafka gives a broker that presents its certificate (mutual TLS): the
    subject's RFC 2253 name, most specific first."""
    return f"User:CN={broker},O=dcdrill"
