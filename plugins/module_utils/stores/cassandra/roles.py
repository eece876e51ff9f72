# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Cassandra roles (CQL authentication): read system_auth.roles, create, alter or drop a role.

Passwords travel only inside the CQL statement sent to the server; the statements this module returns have
the password replaced by a placeholder. Cassandra stores only a salted hash, so a password is set when the role
is created (or always, with update_password=always), never compared.
"""

from __future__ import annotations

import re

from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql

_ROLE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
HIDDEN = "'********'"


def read_role(session, name):
    row = session.execute("SELECT role, can_login, is_superuser FROM system_auth.roles WHERE role = %s", [name]).one()
    if row is None:
        return None
    return dict(login=bool(row.can_login), superuser=bool(row.is_superuser))


def _quote(text):
    return "'%s'" % str(text).replace("'", "''")


def ensure_role(
    session,
    name,
    state="present",
    password=None,
    login=True,
    superuser=False,
    update_password="on_create",
    check_mode=False,
):
    """Returns dict(changed, queries (passwords hidden), diff). CassandraError for bad input."""
    if not _ROLE.match(name or ""):
        raise cql.CassandraError("name: %r is not a role name (a letter, then letters, digits or _; at most 48)" % name)
    if update_password not in ("on_create", "always"):
        raise cql.CassandraError("update_password: %r is not allowed; choose on_create or always" % update_password)
    current = read_role(session, name)
    statements = []
    if state == "absent":
        if current is not None:
            statements.append(("DROP ROLE %s" % name, "DROP ROLE %s" % name))
        after = {}
    else:
        after = dict(login=bool(login), superuser=bool(superuser))
        options = ["LOGIN = %s" % str(bool(login)).lower(), "SUPERUSER = %s" % str(bool(superuser)).lower()]
        if current is None:
            if login and not password:
                raise cql.CassandraError("password: a role that can log in needs a password")
            secret = ["PASSWORD = %s" % _quote(password)] if password else []
            shown = ["PASSWORD = %s" % HIDDEN] if password else []
            statements.append(
                (
                    "CREATE ROLE %s WITH %s" % (name, " AND ".join(secret + options)),
                    "CREATE ROLE %s WITH %s" % (name, " AND ".join(shown + options)),
                )
            )
        else:
            changed_options = [
                option
                for option, key in zip(options, ("login", "superuser"), strict=True)
                if current[key] != after[key]
            ]
            if password and update_password == "always":
                statements.append(
                    (
                        "ALTER ROLE %s WITH %s" % (name, " AND ".join(["PASSWORD = %s" % _quote(password)] + options)),
                        "ALTER ROLE %s WITH %s" % (name, " AND ".join(["PASSWORD = %s" % HIDDEN] + options)),
                    )
                )
            elif changed_options:
                statements.append(("ALTER ROLE %s WITH %s" % (name, " AND ".join(changed_options)),) * 2)
    if statements and not check_mode:
        for statement, _shown in statements:
            session.execute(statement, timeout=60)
    return dict(
        changed=bool(statements),
        queries=[shown for _statement, shown in statements],
        diff=dict(before=current or {}, after=after),
    )
