# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  port:
    description: Cassandra's CQL port (Redis and MongoDB nodes carry their port in their address).
    type: int
    default: 9042
  login_user:
    description: Cassandra role, Redis ACL user or MongoDB user.
    type: str
  login_password:
    description: Its password. Never logged, never on a command line.
    type: str
  tls:
    description: Connect with TLS.
    type: bool
    default: false
  ca_file:
    description: CA bundle that signs the servers' certificates.
    type: path
  client_cert_file:
    description:
      - Client certificate, when the servers require one (Cassandra C(require_client_auth), Redis
        C(tls-auth-clients yes), MongoDB with C(net.tls.CAFile) and no C(allowConnectionsWithoutCertificates)).
      - For MongoDB one PEM file with the certificate and its private key.
    type: path
  client_key_file:
    description: Private key of O(client_cert_file) (Cassandra and Redis; MongoDB reads it from O(client_cert_file)).
    type: path
  validate_certs:
    description: Verify the servers' certificates.
    type: bool
    default: true
  check_hostname:
    description:
      - With O(validate_certs), also check that each server's certificate names the node as it is addressed (an IP
        address needs an IP entry in the certificate's subject alternative names).
    type: bool
    default: true
  auth_source:
    description: MongoDB authentication database.
    type: str
    default: admin
"""
