# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
name: connection
short_description: How the modules log in to a node of the inventory - user, password and TLS, from its variables
description:
  - For one inventory host, the connection options of the collection's store-neutral modules (doc fragment
    C(tactician.nosql.any_store)) - C(login_user), C(login_password), C(tls), C(ca_file), C(client_cert_file),
    C(client_key_file), C(validate_certs), C(check_hostname) - with only the keys the inventory sets.
  - One precedence for every playbook. The user and password come from C(tactician_<store>_user) and
    C(tactician_<store>_password), else the lab roles' variables (C(redis_node_user) and C(redis_node_password),
    the user only with a password). TLS from C(tactician_<store>_tls), else C(tactician_tls); the files from
    C(tactician_<store>_ca_file), else C(tactician_ca_file) (and the same for C(client_cert_file),
    C(client_key_file), C(validate_certs), C(check_hostname)).
  - With O(style=redis) the CA file is returned as C(ca_certs), the name the Redis modules take; with
    O(style=cassandra) the TLS options carry the names of the CQL modules (C(ssl), C(ssl_ca_file),
    C(ssl_cert_file), C(ssl_key_file), C(ssl_validate), C(ssl_check_hostname)).
  - The password is a secret - pass the result only to module options, never to a message.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  _terms:
    description: One inventory host name.
    required: true
    type: list
    elements: str
  store:
    description: The store of the node.
    type: str
    choices: [cassandra, redis, mongodb]
    required: true
  style:
    description: V(any) for the store-neutral modules' option names, V(redis) or V(cassandra) for that store's
      modules'.
    type: str
    choices: [any, redis, cassandra]
    default: any
"""

EXAMPLES = r"""
- name: Every Redis node sees cluster_state ok
  vars:
    _login: "{{ lookup('tactician.nosql.connection', groups['redis'][0], store='redis', style='redis') }}"
  tactician.nosql.redis_health:
    nodes: "{{ query('tactician.nosql.cluster_nodes', 'redis', store='redis') }}"
    login_user: "{{ _login.login_user | default(omit) }}"
    login_password: "{{ _login.login_password | default(omit) }}"
    tls: "{{ _login.tls | default(omit) }}"
    ca_certs: "{{ _login.ca_certs | default(omit) }}"
    client_cert_file: "{{ _login.client_cert_file | default(omit) }}"
    client_key_file: "{{ _login.client_key_file | default(omit) }}"
"""

RETURN = r"""
_raw:
  description: One dict with the options the inventory sets for the host.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

_TLS_KEYS = ("tls", "ca_file", "client_cert_file", "client_key_file", "validate_certs", "check_hostname")
_STYLES = {
    "any": {},
    "redis": {"ca_file": "ca_certs"},
    "cassandra": {
        "tls": "ssl",
        "ca_file": "ssl_ca_file",
        "client_cert_file": "ssl_cert_file",
        "client_key_file": "ssl_key_file",
        "validate_certs": "ssl_validate",
        "check_hostname": "ssl_check_hostname",
    },
}


def _set(value):
    return value is not None and value != ""


def connection(host, variables, store, style="any"):
    """The connection options of host from its inventory variables (see DOCUMENTATION for the precedence)."""
    variables = variables or {}
    hostvars = variables.get("hostvars", {})
    if host not in hostvars:
        raise AnsibleLookupError("connection: host %r is not in the inventory" % host)
    own = hostvars[host]
    out = {}
    user = own.get("tactician_%s_user" % store)
    password = own.get("tactician_%s_password" % store)
    if store == "redis" and not _set(password) and _set(own.get("redis_node_password")):
        password = own.get("redis_node_password")
        user = user if _set(user) else own.get("redis_node_user")
    if _set(user):
        out["login_user"] = str(user)
    if _set(password):
        out["login_password"] = str(password)
    for key in _TLS_KEYS:
        value = own.get("tactician_%s_%s" % (store, key))
        if not _set(value):
            value = own.get("tactician_%s" % key)
        if _set(value):
            out[key] = value
    return {_STYLES[style].get(key, key): value for key, value in out.items()}


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError("connection: give one inventory host, got %d" % len(terms))
        return [connection(terms[0], variables, self.get_option("store"), self.get_option("style"))]
