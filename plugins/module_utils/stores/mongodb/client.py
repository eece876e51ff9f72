# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""MongoDB adapter: connection options (SCRAM, TLS) and the server facts other parts read.

The only place of the collection that imports pymongo. Written against the documented server API
(hello, serverStatus); see docs/testing-mongodb.md for what runs against which server.
"""

from __future__ import annotations

import traceback

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import StoreError

try:
    from pymongo import MongoClient
    from pymongo.errors import PyMongoError

    HAS_PYMONGO = True
    PYMONGO_IMPORT_ERROR = None
except ImportError:
    MongoClient = None
    HAS_PYMONGO = False
    PYMONGO_IMPORT_ERROR = traceback.format_exc()

    class PyMongoError(Exception):
        pass


AUTH_MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-1"]


class MongoAdminError(StoreError):
    """A MongoDB server could not be reached or refused a command."""


def mongodb_argument_spec():
    """Connection options of every module that talks to MongoDB (doc fragment tactician.nosql.mongodb)."""
    return dict(
        login_host=dict(type="str", default="127.0.0.1"),
        login_port=dict(type="int", default=27017),
        login_user=dict(type="str"),
        login_password=dict(type="str", no_log=True),
        login_database=dict(type="str", default="admin"),
        auth_mechanism=dict(type="str", choices=AUTH_MECHANISMS),
        replica_set=dict(type="str"),
        direct_connection=dict(type="bool", default=True),
        tls=dict(type="bool", default=False),
        tls_ca_file=dict(type="path"),
        tls_certificate_key_file=dict(type="path", no_log=False),
        tls_allow_invalid_certificates=dict(type="bool", default=False),
        tls_allow_invalid_hostnames=dict(type="bool", default=False),
        connect_timeout=dict(type="float", default=5.0),
    )


def params_from_any(params, address):
    """This adapter's connection options for the server at 'host:port' from the collection's store-neutral ones
    (doc fragment any_store). MongoDB takes the client certificate and its key in one PEM file (client_cert_file);
    a key file of its own is refused by name."""
    key_file = params.get("client_key_file")
    if key_file and key_file != params.get("client_cert_file"):
        raise MongoAdminError(
            "client_key_file: MongoDB reads the client certificate and its private key from one PEM file; give that "
            "file as client_cert_file and leave client_key_file unset"
        )
    host, _sep, port = address.partition(":")
    return dict(
        login_host=host,
        login_port=int(port or 27017),
        login_user=params.get("login_user"),
        login_password=params.get("login_password"),
        login_database=params.get("auth_source") or "admin",
        tls=params.get("tls"),
        tls_ca_file=params.get("ca_file"),
        tls_certificate_key_file=params.get("client_cert_file"),
        tls_allow_invalid_certificates=not params.get("validate_certs", True),
        tls_allow_invalid_hostnames=not params.get("check_hostname", True),
        direct_connection=True,
        connect_timeout=params.get("connect_timeout") or 5.0,
    )


def missing_libraries():
    return [] if HAS_PYMONGO else [("pymongo", PYMONGO_IMPORT_ERROR)]


def client_kwargs(params):
    """Keyword arguments for MongoClient; credentials travel as arguments, never inside a URI."""
    timeout_ms = int(float(params.get("connect_timeout") or 5.0) * 1000)
    kwargs = dict(
        host=params.get("login_host") or "127.0.0.1",
        port=int(params.get("login_port") or 27017),
        connectTimeoutMS=timeout_ms,
        serverSelectionTimeoutMS=timeout_ms,
        directConnection=bool(params.get("direct_connection", True)) and not params.get("replica_set"),
        appname="tactician.nosql",
    )
    if params.get("replica_set"):
        kwargs["replicaSet"] = params["replica_set"]
    if params.get("login_user"):
        kwargs.update(
            username=params["login_user"],
            password=params.get("login_password") or "",
            authSource=params.get("login_database") or "admin",
        )
        if params.get("auth_mechanism"):
            kwargs["authMechanism"] = params["auth_mechanism"]
    if params.get("tls"):
        kwargs["tls"] = True
        if params.get("tls_ca_file"):
            kwargs["tlsCAFile"] = params["tls_ca_file"]
        if params.get("tls_certificate_key_file"):
            kwargs["tlsCertificateKeyFile"] = params["tls_certificate_key_file"]
        if params.get("tls_allow_invalid_certificates"):
            kwargs["tlsAllowInvalidCertificates"] = True
        elif params.get("tls_allow_invalid_hostnames"):
            kwargs["tlsAllowInvalidHostnames"] = True
    return kwargs


def connect(params):
    return MongoClient(**client_kwargs(params))


def server_facts(client):
    """Version, role and uptime of the server; works on a standalone, a replica set member or mongos."""
    admin = client.admin
    try:
        admin.command("ping")
        build = admin.command("buildInfo")
        try:
            hello = admin.command("hello")
        except PyMongoError:
            hello = admin.command("isMaster")
    except PyMongoError as exc:
        raise MongoAdminError(str(exc)) from exc
    if hello.get("msg") == "isdbgrid":
        role = "mongos"
    elif hello.get("setName"):
        if hello.get("isWritablePrimary", hello.get("ismaster")):
            role = "primary"
        elif hello.get("secondary"):
            role = "secondary"
        elif hello.get("arbiterOnly"):
            role = "arbiter"
        else:
            role = "other"
    else:
        role = "standalone"
    return dict(
        version=build.get("version"),
        role=role,
        set_name=hello.get("setName"),
        max_wire_version=hello.get("maxWireVersion"),
    )


def _first(cursor):
    for document in cursor:
        return document
    return None


def counters_from_server_status(status):
    """Cumulative counters, gauges and state from a serverStatus document: opcounters (query -> read, insert,
    update, delete; getmore -> scan continuation; command -> other), the WiredTiger cache's page requests and
    misses, and its fill (state_from_server_status)."""
    ops = status.get("opcounters", {})
    counters = {
        "read": int(ops.get("query", 0)),
        "insert": int(ops.get("insert", 0)),
        "update": int(ops.get("update", 0)),
        "delete": int(ops.get("delete", 0)),
        "scan": int(ops.get("getmore", 0)),
        "other": int(ops.get("command", 0)),
    }
    cache = status.get("wiredTiger", {}).get("cache", {})
    requested = cache.get("pages requested from the cache")
    read_in = cache.get("pages read into cache")
    if requested is not None and read_in is not None:
        counters["wiredtiger_cache_requests"] = int(requested)
        counters["wiredtiger_cache_hits"] = max(int(requested) - int(read_in), 0)
    gauges = {
        "data_bytes": None,
        "cache_bytes": cache.get("bytes currently in the cache"),
        "cache_max_bytes": cache.get("maximum bytes configured"),
    }
    return {"counters": counters, "gauges": gauges, "state": state_from_server_status(status)}


def state_from_server_status(status):
    """The state fields of one moment from serverStatus: wiredtiger_cache_fill (wiredTiger.cache "bytes currently
    in the cache" / "maximum bytes configured") and wiredtiger_dirty_fill ("tracked dirty bytes in the cache" /
    the same maximum: data written but not checkpointed yet). None without a WiredTiger section (another storage
    engine, FerretDB) or without a configured maximum."""
    cache = (status.get("wiredTiger") or {}).get("cache") or {}
    maximum = cache.get("maximum bytes configured")

    def fill(name):
        value = cache.get(name)
        if value is None or not maximum or int(maximum) <= 0:
            return None
        return max(int(value), 0) / float(maximum)

    return {
        "wiredtiger_cache_fill": fill("bytes currently in the cache"),
        "wiredtiger_dirty_fill": fill("tracked dirty bytes in the cache"),
    }


def collection_facts(coll_stats, index_stats):
    """Per-collection facts from one `$collStats: {storageStats: {}}` document and the `$indexStats` documents of
    the same collection: documents, data and storage bytes, and each index's accesses (counters, so rates can be
    taken) with whether it is hidden, a TTL index or still building."""
    storage = (coll_stats or {}).get("storageStats", {})
    indexes = {}
    for entry in index_stats or []:
        spec = entry.get("spec", {})
        indexes[entry.get("name")] = {
            "accesses": int(entry.get("accesses", {}).get("ops", 0)),
            "key": dict(entry.get("key", {})),
            "hidden": bool(spec.get("hidden", False)),
            "ttl_seconds": spec.get("expireAfterSeconds"),
            "building": bool(entry.get("building", False)),
        }
    return {
        "documents": storage.get("count"),
        "data_bytes": storage.get("size"),
        "storage_bytes": storage.get("storageSize"),
        "indexes": indexes,
    }


def profiler_summary(profile_documents):
    """Operations the database profiler recorded (system.profile documents), by operation type, with the slowest
    duration in ms: what is slow, where profiling is on."""
    summary = {}
    for doc in profile_documents:
        op = doc.get("op", "other")
        entry = summary.setdefault(op, {"count": 0, "max_ms": 0})
        entry["count"] += 1
        entry["max_ms"] = max(entry["max_ms"], int(doc.get("millis", 0)))
    return summary


def indexes_from_specs(specs):
    """The indexes of collection_facts from listIndexes documents, for a server without $indexStats (FerretDB):
    the same fields, with accesses None (unknown, not 0)."""
    indexes = {}
    for spec in specs or []:
        indexes[spec.get("name")] = {
            "accesses": None,
            "key": dict(spec.get("key", {})),
            "hidden": bool(spec.get("hidden", False)),
            "ttl_seconds": spec.get("expireAfterSeconds"),
            "building": False,
        }
    return indexes


def _collection(collection):
    """collection_facts of one collection; a server without $collStats or $indexStats gives what it has (its
    indexes from listIndexes then, without access counts)."""
    try:
        stats = _first(collection.aggregate([{"$collStats": {"storageStats": {}}}]))
    except PyMongoError:
        stats = None
    try:
        index_stats = list(collection.aggregate([{"$indexStats": {}}]))
    except PyMongoError:
        index_stats = None
    facts = collection_facts(stats, index_stats)
    if index_stats is None:
        try:
            facts["indexes"] = indexes_from_specs(collection.list_indexes())
        except PyMongoError:
            pass
    return facts


def _profiled(database):
    """{database: profiler_summary} where the profiler is on, else {}."""
    try:
        if database.command("profile", -1).get("was", 0) <= 0:
            return {}
        return {database.name: profiler_summary(database["system.profile"].find().sort("$natural", -1).limit(1000))}
    except PyMongoError:
        return {}


def _user_databases(client):
    return [name for name in client.list_database_names() if name not in ("admin", "local", "config")]


def workload_counters(client):
    """One server's counters and gauges (serverStatus); data_bytes from dbStats of every database."""
    try:
        status = client.admin.command("serverStatus")
        snapshot = counters_from_server_status(status)
        total = 0
        collections = {}
        profiled = {}
        for name in _user_databases(client):
            database = client[name]
            total += int(database.command("dbStats").get("dataSize", 0))
            for coll in database.list_collection_names():
                if coll.startswith("system."):
                    continue
                collections["%s.%s" % (name, coll)] = _collection(database[coll])
            profiled.update(_profiled(database))
        snapshot["gauges"]["data_bytes"] = total
        snapshot["gauges"]["collections"] = collections
        if profiled:
            snapshot["gauges"]["profiler"] = profiled
    except PyMongoError as exc:
        raise MongoAdminError(str(exc)) from exc
    return snapshot
