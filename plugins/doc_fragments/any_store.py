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
    description: CA bundle for TLS.
    type: path
  auth_source:
    description: MongoDB authentication database.
    type: str
    default: admin
"""
