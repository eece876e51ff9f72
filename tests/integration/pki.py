"""A certificate authority of the test run's own, and server and client certificates signed by it (the integration
tests' TLS servers: no certificate is committed)."""

from __future__ import annotations

import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "tactician test CA"


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def write_key(path, key):
    with open(path, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    os.chmod(path, 0o600)


def write_cert(path, cert):
    with open(path, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))


def _names(names):
    """x509 subject alternative names from strings: IP addresses as IPAddress, the rest as DNSName."""
    out = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _cert(subject, key, issuer, issuer_key, ca=False, names=(), usages=()):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(_names(names)), critical=False)
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


class Authority:
    """A CA whose certificate is written to <folder>/ca.pem; issue() signs a key pair for a name."""

    def __init__(self, folder, name=CA_NAME):
        self.folder = folder
        self._key = _key()
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.ca_file = os.path.join(folder, "ca.pem")
        write_cert(self.ca_file, _cert(name, self._key, self._name, self._key, ca=True))

    def issue(self, label, names=(), server=True, client=False):
        """(certificate file, key file) for label, naming names (IP addresses or DNS names)."""
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        key = _key()
        cert_file = os.path.join(self.folder, label + ".pem")
        key_file = os.path.join(self.folder, label + "-key.pem")
        write_key(key_file, key)
        write_cert(cert_file, _cert("tactician " + label, key, self._name, self._key, names=names, usages=usages))
        return cert_file, key_file


def make_pki(folder, server_names=("127.0.0.1", "localhost")):
    """A CA, a server certificate naming server_names (by default 127.0.0.1 and localhost, not 127.0.0.2), and a
    client certificate: {ca, server_cert, server_key, client_cert, client_key} file paths."""
    authority = Authority(folder)
    server_cert, server_key = authority.issue("server", server_names)
    client_cert, client_key = authority.issue("client", server=False, client=True)
    return dict(
        ca=authority.ca_file,
        server_cert=server_cert,
        server_key=server_key,
        client_cert=client_cert,
        client_key=client_key,
    )
