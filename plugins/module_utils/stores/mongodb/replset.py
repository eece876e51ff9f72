# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""A replica set as its members report it: who is primary, each member's state and replication lag, the voting
members, and what keeps the set from being healthy.

Read from the documented replies of ``hello`` and ``replSetGetStatus`` (MongoDB manual, "replSetGetStatus" output:
``set``, ``votingMembersCount`` (4.4+), ``members[]`` with ``name``, ``health``, ``stateStr``, ``optimeDate``,
``optime.ts``, ``self``) and, when ``votingMembersCount`` is absent (before 4.4), ``replSetGetConfig``
(``config.members[].votes``). A standalone mongod (no ``setName`` in hello, as FerretDB) and a mongos
(``msg: isdbgrid``) are reported as such, with no members.
"""

from __future__ import annotations

from datetime import UTC

from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb.client import (
    MongoAdminError,
    PyMongoError,
)

HEALTHY_STATES = ("PRIMARY", "SECONDARY", "ARBITER")


def _seconds(member):
    """The member's last applied operation as seconds since the epoch: optimeDate, else optime.ts (a BSON
    Timestamp, whose .time is seconds), else None (an arbiter holds no data)."""
    date = member.get("optimeDate")
    if date is not None and hasattr(date, "timestamp"):
        # pymongo gives naive datetimes in UTC; compare them as UTC
        if date.tzinfo is None:
            date = date.replace(tzinfo=UTC)
        return date.timestamp()
    optime = member.get("optime")
    stamp = optime.get("ts") if isinstance(optime, dict) else None
    if stamp is not None and hasattr(stamp, "time"):
        return float(stamp.time)
    return None


def _voting(status, config):
    """Voting members: replSetGetStatus votingMembersCount (4.4+), else the votes of replSetGetConfig's members,
    else every member (the default of one vote each)."""
    if status.get("votingMembersCount") is not None:
        return int(status["votingMembersCount"]), "replSetGetStatus.votingMembersCount"
    members = ((config or {}).get("config") or config or {}).get("members")
    if members:
        return sum(1 for m in members if int(m.get("votes", 1)) > 0), "replSetGetConfig.members[].votes"
    return len(status.get("members") or []), "members of replSetGetStatus (one vote each assumed)"


def view_from_replies(hello, status=None, config=None):
    """The deployment as dict(kind, set_name, me, primary, members, voting_members, voting_source, majority).

    kind: "replica_set", "standalone" or "mongos". members (replica set only): one dict per member of
    replSetGetStatus, in its order, {name, state, health, self, optime_s, lag_s}; lag_s is how far the member's
    last applied operation is behind the primary's (None without a primary or for an arbiter)."""
    hello = hello or {}
    if hello.get("msg") == "isdbgrid" or not hello.get("setName"):
        # no set: a mongos routes (no vote, no data); a standalone is its own one-member deployment
        mongos = hello.get("msg") == "isdbgrid"
        kind = "mongos" if mongos else "standalone"
        return dict(
            kind=kind,
            set_name=None,
            me=hello.get("me"),
            primary=None,
            primaries=[],
            members=[],
            voting_members=0 if mongos else 1,
            voting_source=kind,
            majority=None if mongos else 1,
        )
    if status is None:
        raise MongoAdminError("replica set %s: no replSetGetStatus reply to read its members from" % hello["setName"])
    members = []
    for raw in status.get("members") or []:
        members.append(
            dict(
                name=str(raw.get("name")),
                state=str(raw.get("stateStr") or "UNKNOWN"),
                health=float(raw.get("health", 1 if raw.get("self") else 0)),
                self=bool(raw.get("self", False)),
                optime_s=_seconds(raw),
                lag_s=None,
            )
        )
    primaries = [m for m in members if m["state"] == "PRIMARY"]
    primary = primaries[0] if len(primaries) == 1 else None
    if primary is not None and primary["optime_s"] is not None:
        for member in members:
            if member["state"] == "SECONDARY" and member["optime_s"] is not None:
                member["lag_s"] = round(max(0.0, primary["optime_s"] - member["optime_s"]), 3)
            elif member is primary:
                member["lag_s"] = 0.0
    voting, source = _voting(status, config)
    return dict(
        kind="replica_set",
        set_name=str(status.get("set") or hello["setName"]),
        me=hello.get("me"),
        primary=primary["name"] if primary else None,
        primaries=[m["name"] for m in primaries],
        members=members,
        voting_members=voting,
        voting_source=source,
        majority=voting // 2 + 1,
    )


def set_problems(view, max_lag_s):
    """What keeps a replica set from being healthy, as sentences (empty: healthy). Every member reachable
    (health 1) and PRIMARY, SECONDARY or ARBITER; exactly one primary; every secondary at most max_lag_s seconds
    behind it. A standalone or a mongos has no set to judge: no problem."""
    if view["kind"] != "replica_set":
        return []
    found = []
    for member in view["members"]:
        if member["health"] < 1:
            found.append("%s is not reachable from the member asked (health 0, %s)" % (member["name"], member["state"]))
        elif member["state"] not in HEALTHY_STATES:
            found.append("%s is %s, not PRIMARY, SECONDARY or ARBITER" % (member["name"], member["state"]))
    primaries = view.get("primaries") or []
    if not primaries:
        found.append("replica set %s has no primary" % view["set_name"])
    elif len(primaries) > 1:
        found.append(
            "replica set %s reports %d primaries (%s)" % (view["set_name"], len(primaries), ", ".join(primaries))
        )
    for member in view["members"]:
        if member["lag_s"] is not None and member["lag_s"] > max_lag_s:
            found.append(
                "%s is %.1f s behind the primary (replication lag above %.1f s)"
                % (member["name"], member["lag_s"], max_lag_s)
            )
    return found


def read_view(client):
    """view_from_replies of the server client is connected to: hello, then replSetGetStatus on a member (and
    replSetGetConfig when the status has no votingMembersCount). MongoAdminError when a command fails."""
    try:
        hello = client.admin.command("hello")
        if hello.get("msg") == "isdbgrid" or not hello.get("setName"):
            return view_from_replies(hello)
        status = client.admin.command("replSetGetStatus")
        config = None
        if status.get("votingMembersCount") is None:
            config = client.admin.command("replSetGetConfig")
    except PyMongoError as exc:
        raise MongoAdminError(str(exc)) from exc
    return view_from_replies(hello, status, config)


def step_down(client, seconds):
    """replSetStepDown on the primary client is connected to (the server waits for an electable secondary to catch
    up, 10 s by default, then steps down and does not stand for election for `seconds`)."""
    try:
        client.admin.command("replSetStepDown", int(seconds))
    except PyMongoError as exc:
        text = str(exc).lower()
        # before 4.2 the server closed every connection on a step down: the command's reply is lost, not refused
        if "connection" not in text and "closed" not in text:
            raise MongoAdminError(str(exc)) from exc


def read_first(connections, connect):
    """read_view of the first server of connections (a list of client parameter sets) that answers; the members of
    a replica set each report the whole set. MongoAdminError naming every server that failed."""
    failed = []
    for params in connections:
        client = None
        try:
            client = connect(params)
            return read_view(client)
        except (MongoAdminError, PyMongoError) as exc:
            failed.append(
                "%s:%s: %s" % (params.get("login_host"), params.get("login_port"), str(exc).splitlines()[0][:200])
            )
        finally:
            if client is not None:
                client.close()
    raise MongoAdminError("no member answered: %s" % "; ".join(failed))
