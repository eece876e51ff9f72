# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  login_hosts:
    description: CQL contact points.
    type: list
    elements: str
    default: ['127.0.0.1']
  login_port:
    description: CQL native transport port.
    type: int
    default: 9042
  login_user:
    description: Role name for password authentication (PasswordAuthenticator).
    type: str
  login_password:
    description: Password of O(login_user). Never logged.
    type: str
  ssl:
    description: Use client-to-node TLS.
    type: bool
    default: false
  ssl_ca_file:
    description: CA bundle that signs the nodes' certificates.
    type: path
  ssl_cert_file:
    description: Client certificate, when the nodes require client authentication.
    type: path
  ssl_key_file:
    description: Private key of O(ssl_cert_file).
    type: path
  ssl_validate:
    description: Verify the nodes' certificates.
    type: bool
    default: true
  ssl_check_hostname:
    description:
      - With O(ssl_validate), also check that each node's certificate names the address the driver connects to (an
        IP address needs an IP entry in the certificate's subject alternative names). Turn off only for
        certificates issued without the nodes' names.
    type: bool
    default: true
  connect_timeout:
    description: Seconds to wait for a connection and, at least, for each request.
    type: float
    default: 10.0
requirements:
  - cassandra-driver >= 3.29
"""
