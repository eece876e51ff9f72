# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  login_host:
    description: Address of the mongod or mongos.
    type: str
    default: 127.0.0.1
  login_port:
    description: Its port.
    type: int
    default: 27017
  login_user:
    description: User for SCRAM authentication.
    type: str
  login_password:
    description: Password of O(login_user). Never logged, never put in a connection string.
    type: str
  login_database:
    description: Authentication database of O(login_user).
    type: str
    default: admin
  auth_mechanism:
    description: SCRAM variant; negotiated with the server when not set.
    type: str
    choices: [SCRAM-SHA-256, SCRAM-SHA-1]
  replica_set:
    description: Replica set name; connect to the set instead of one server.
    type: str
  direct_connection:
    description: Talk to the given server only (ignored when O(replica_set) is set).
    type: bool
    default: true
  tls:
    description: Connect with TLS.
    type: bool
    default: false
  tls_ca_file:
    description: CA bundle that signs the servers' certificates.
    type: path
  tls_certificate_key_file:
    description: Client certificate and key in one PEM file (x.509 client authentication or mutual TLS).
    type: path
  tls_allow_invalid_certificates:
    description: Accept servers' certificates that do not verify. Lab use only.
    type: bool
    default: false
  tls_allow_invalid_hostnames:
    description:
      - Accept a valid certificate that does not name the server (as given in O(login_host)). Lab use only.
    type: bool
    default: false
  connect_timeout:
    description: Seconds to wait for a connection and for server selection.
    type: float
    default: 5.0
requirements:
  - pymongo >= 4.0
"""
