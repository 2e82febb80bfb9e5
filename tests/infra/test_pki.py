"""The stack's certificate authority (infra/pki.py): a certificate per broker for the names
clients dial, signed by the stack's CA, private files 0600, and a second run that changes nothing
unless a broker's address did."""

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from dcdrill.infra import pki


def _cert(path):
    """The broker's own certificate: the first in its PEM chain (after its key)."""
    return x509.load_pem_x509_certificates(path.read_bytes())[0]


def test_each_broker_gets_a_certificate_for_its_name_and_address_signed_by_the_stacks_ca(tmp_path):
    folder = pki.ensure(tmp_path / "tls", "east", {"b1.dc-a.lab": "10.20.1.1", "b2.dc-b.lab": "i-0abc"})
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    b1, b2 = _cert(folder / "b1.dc-a.lab.pem"), _cert(folder / "b2.dc-b.lab.pem")
    store = (folder / "b1.dc-a.lab.pem").read_text()  # what Kafka reads (KIP-651): a PKCS#8 key, then the chain
    assert store.startswith("-----BEGIN PRIVATE KEY-----") and store.count("BEGIN CERTIFICATE") == 2
    assert pki.names_in((folder / "b1.dc-a.lab.pem").read_bytes()) == ("b1.dc-a.lab", "10.20.1.1")
    assert pki.names_in((folder / "b2.dc-b.lab.pem").read_bytes()) == ("b2.dc-b.lab", None)  # an instance id: no IP
    for cert in (b1, b2):
        cert.verify_directly_issued_by(ca)
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH} <= set(usage)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir() if p.name != "ca.pem"} == {
        "ca.key": 0o600,
        "b1.dc-a.lab.pem": 0o600,
        "b2.dc-b.lab.pem": 0o600,
    }
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_second_run_keeps_every_file_but_a_moved_brokers(tmp_path):
    brokers = {"b1.dc-a.lab": "10.20.1.1", "b2.dc-b.lab": "10.20.2.1"}
    folder = pki.ensure(tmp_path / "tls", "east", brokers)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    pki.ensure(folder, "east", brokers)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    pki.ensure(folder, "east", {**brokers, "b2.dc-b.lab": "10.20.2.9"})
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert [n for n in sorted(after) if after[n] != before[n]] == ["b2.dc-b.lab.pem"]
    assert pki.names_in(after["b2.dc-b.lab.pem"]) == ("b2.dc-b.lab", "10.20.2.9")


def test_a_file_without_a_certificate_names_nothing_and_a_brokers_principal_is_its_subject():
    assert pki.names_in(b"not a certificate") is None
    assert pki.principal("b1.dc-a.lab") == "User:CN=b1.dc-a.lab,O=dcdrill"
