# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  login_host:
    description: Address of the Redis node to talk to (modules that take a list of nodes use it for nothing else).
    type: str
    default: 127.0.0.1
  login_port:
    description: Port of that node.
    type: int
    default: 6379
  login_user:
    description: ACL user name.
    type: str
  login_password:
    description: Password of O(login_user) (or the C(requirepass) of the default user). Never logged.
    type: str
  tls:
    description: Connect with TLS.
    type: bool
    default: false
  ca_certs:
    description: CA bundle that signs the servers' certificates.
    type: path
  client_cert_file:
    description: Client certificate, when the servers require one (C(tls-auth-clients yes)).
    type: path
  client_key_file:
    description: Private key of O(client_cert_file).
    type: path
  validate_certs:
    description: Verify the servers' certificates.
    type: bool
    default: true
  check_hostname:
    description:
      - With O(validate_certs), also check that the server's certificate names the node as it is addressed (an IP
        address needs an IP entry in the certificate's subject alternative names). Turn off only for certificates
        issued without the nodes' names.
    type: bool
    default: true
  connect_timeout:
    description: Seconds to wait for a connection.
    type: float
    default: 5.0
requirements:
  - redis (redis-py) >= 5.0
"""
