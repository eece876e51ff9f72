# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Glue of the load module and CLI: a validated plan from parameters (workload spec, store properties, phases),
then its execution (prepare or reload the store through its adapter, run each phase with the load driver)."""

from __future__ import annotations

import math
import os
import tempfile
import time

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError, TrialError, reported_as
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver, schedules, ycsb

STORES = tuple(loaddriver.STORES)


class LoadError(TrialError):
    """Bad parameters or a failed run; the message names the field or the host."""


def _tls_properties(params, prefix, key_in_cert=False):
    """The bindings' TLS properties under prefix (the load driver's Tls class): the CA, the client certificate and
    whether the certificate is validated and must name the node, from the module's connection options.

    key_in_cert: the store takes the certificate and its key in one PEM file (MongoDB, as the adapter requires);
    the binding then reads the key from client_cert_file too."""
    if not params.get("tls"):
        return {}
    if key_in_cert and params.get("client_cert_file") and not params.get("client_key_file"):
        params = dict(params, client_key_file=params["client_cert_file"])
    props = {
        prefix + ".validate": params.get("validate_certs") is not False,
        prefix + ".checkhostname": params.get("check_hostname") is not False,
    }
    for option, name in (("ca_file", "cafile"), ("client_cert_file", "certfile"), ("client_key_file", "keyfile")):
        if params.get(option):
            props["%s.%s" % (prefix, name)] = params[option]
    if bool(params.get("client_cert_file")) != bool(params.get("client_key_file")):
        raise LoadError("client_cert_file and client_key_file go together: give both or neither")
    return props


def _store_properties(params, spec, scans=None):
    store = params["store"]
    hosts = params["hosts"]
    user = params.get("login_user") or ""
    password = params.get("login_password") or ""
    if store == "cassandra":
        props = {
            "cassandra.hosts": ",".join(hosts),
            "cassandra.port": params.get("port") or 9042,
            "cassandra.keyspace": params.get("keyspace") or "ycsb",
            "cassandra.readconsistencylevel": params.get("consistency") or "ONE",
            "cassandra.writeconsistencylevel": params.get("consistency") or "ONE",
            "cassandra.ssl": bool(params.get("tls")),
        }
        props.update(_tls_properties(params, "cassandra.ssl"))
        if user:
            props.update({"cassandra.username": user, "cassandra.password": password})
    elif store == "redis":
        props = {
            "redis.nodes": ",".join(hosts),
            "redis.tls": bool(params.get("tls")),
            # Scans need the key index; a workload without scans then sends one command per operation.
            "redis.scanindex": spec.scanproportion > 0 if scans is None else scans,
        }
        props.update(_tls_properties(params, "redis.tls"))
        if user:
            props["redis.user"] = user
        if password:
            props["redis.password"] = password
    else:
        host, _sep, port = hosts[0].partition(":")
        props = {
            "mongodb.host": host,
            "mongodb.port": port or 27017,
            "mongodb.database": params.get("database") or "ycsb",
            "mongodb.tls": bool(params.get("tls")),
        }
        props.update(_tls_properties(params, "mongodb.tls", key_in_cert=True))
        if user:
            props.update(
                {"mongodb.user": user, "mongodb.password": password, "mongodb.authsource": params.get("auth_source")}
            )
    return props


def plan(params):
    """Validate the parameters; the plan (without secrets) says what would run."""
    if params["store"] not in STORES:
        raise LoadError("store: %r is not allowed; choose one of %s" % (params["store"], ", ".join(STORES)))
    if not params.get("hosts"):
        raise LoadError("hosts: give at least one node to connect to")
    for name in ("threads", "processes"):
        if int(params.get(name) or 0) < 1:
            raise LoadError("%s: must be >= 1, got %r" % (name, params.get(name)))
    if int(params.get("target") or 0) < 0:
        raise LoadError("target: must be >= 0 ops/s (0 = unthrottled), got %r" % params.get("target"))
    try:
        process.parse_cpus(params.get("speed_probe_cpus"), "speed_probe_cpus")
    except CoreError as exc:
        raise LoadError(str(exc)) from exc
    spec = ycsb.workload(params.get("workload") or "a", **(params.get("properties") or {}))
    phases = list(params.get("phases") or ["run"])
    unknown = [p for p in phases if p not in loaddriver.PHASES]
    if unknown:
        raise LoadError("phases: %s not allowed; choose from %s" % (", ".join(unknown), ", ".join(loaddriver.PHASES)))
    return {
        "store": params["store"],
        "hosts": list(params["hosts"]),
        "workload": (params.get("workload") or "a").upper(),
        "phases": [p for p in loaddriver.PHASES if p in phases],
        "reload": bool(params.get("reload")),
        "threads": int(params["threads"]),
        "processes": int(params["processes"]),
        "target": int(params.get("target") or 0),
        "mix": ycsb.op_mix(spec),
        "read_ratio": ycsb.read_ratio(spec),
        "properties": spec.properties(),
    }


def prepare(params, spec, reload):
    """Create what the bindings need (Cassandra keyspace and table) and, on reload, destroy the data."""
    store = params["store"]
    if store == "cassandra":
        from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql

        conn = dict(cql.params_from_any(params), login_hosts=params["hosts"])
        try:
            cluster, session = cql.connect(conn)
        except cql.CassandraError as exc:
            raise LoadError("hosts: %s" % exc) from exc
        try:
            with reported_as(LoadError, "preparing the YCSB table on %s failed" % ", ".join(params["hosts"])):
                cql.prepare_ycsb_table(
                    session,
                    params.get("keyspace") or "ycsb",
                    spec.table,
                    spec.fieldcount,
                    params.get("replication_factor") or 1,
                    truncate=reload,
                )
        finally:
            cluster.shutdown()
    elif store == "redis" and reload:
        from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter

        conn = redis_adapter.params_from_any(params)
        try:
            redis_adapter.flush_masters(conn, params["hosts"])
        except redis_adapter.RedisAdminError as exc:
            raise LoadError("hosts: %s" % exc) from exc
    elif store == "mongodb" and reload:
        from ansible_collections.tactician.nosql.plugins.module_utils.stores.mongodb import client as mongodb

        client = mongodb.connect(mongodb.params_from_any(params, params["hosts"][0]))
        try:
            client[params.get("database") or "ycsb"].drop_collection(spec.table)
        except mongodb.PyMongoError as exc:
            raise LoadError("hosts: %s: %s" % (params["hosts"][0], exc)) from exc
        finally:
            client.close()


def _server_pids(pid_files):
    pids = []
    for path in pid_files:
        try:
            with open(path) as handle:
                pids.append(int(handle.read().split()[0]))
        except (OSError, ValueError, IndexError) as exc:
            raise LoadError("server_pid_files: cannot read a PID from %s: %s" % (path, exc)) from exc
    return pids


def execute(params, the_plan):
    """Run the plan's phases; returns one result per phase."""
    spec = ycsb.workload(params.get("workload") or "a", **(params.get("properties") or {}))
    prepare(params, spec, the_plan["reload"] and "load" in the_plan["phases"])
    # max_seconds: stop the run phase after that long even if operations remain (YCSB maxexecutiontime).
    extra = {"maxexecutiontime": str(int(params["max_seconds"]))} if params.get("max_seconds") else None
    return [
        _run_phase(
            params,
            the_plan,
            spec,
            phase,
            None,
            extra=extra if phase == "run" else None,
            target=the_plan["target"] if phase == "run" else 0,
        )
        for phase in the_plan["phases"]
    ]


def load_schedule(params):
    """The schedule of params["schedule"] (a file path), or None."""
    if not params.get("schedule"):
        return None
    try:
        return schedules.load_schedule(params["schedule"])
    except (OSError, schedules.ScheduleError) as exc:
        raise LoadError("schedule: %s" % exc) from exc


def execute_schedule(params, the_plan, schedule, on_phase=None):
    """Replay a schedule: the load phase when asked, then one client run per schedule phase with that phase's
    mix, request distribution and rate, for its duration (YCSB maxexecutiontime). Returns one result per run,
    each with its wall-clock start and end, so forecasts can be compared with what was driven."""
    base = ycsb.workload(params.get("workload") or "a", **(params.get("properties") or {}))
    scans = any(phase.mix.get("scan", 0.0) > 0 for phase in schedule.phases)
    results = []
    if "load" in the_plan["phases"]:
        prepare(params, base, the_plan["reload"])
        results.append(_run_phase(params, the_plan, base, "load", scans))
    else:
        prepare(params, base, False)
    for index, phase in enumerate(schedule.phases):
        spec = phase.workload(base)
        extra = {"maxexecutiontime": str(int(math.ceil(phase.duration_s)))}
        if not phase.rate:
            extra["operationcount"] = str(UNBOUNDED_OPERATIONS)
        started = time.time()
        result = _run_phase(params, the_plan, spec, "run", scans, extra, target=int(phase.rate))
        result.update(
            schedule_index=index,
            label=phase.label,
            started=started,
            ended=time.time(),
            mix=dict(phase.mix),
            read_ratio=phase.read_ratio,
        )
        results.append(result)
        if on_phase is not None:
            on_phase(result)
    return results


def with_defaults(**given):
    """A full parameter mapping for plan()/execute() outside a module: the load module's defaults, then given."""
    params = dict(
        port=9042,
        tls=False,
        ca_file=None,
        workload="a",
        properties={},
        phases=["run"],
        reload=False,
        threads=32,
        processes=1,
        target=0,
        keyspace="ycsb",
        replication_factor=1,
        consistency="ONE",
        database="ycsb",
        auth_source="admin",
        heap="512m",
        timeout=3600,
        java="java",
        server_pid_files=[],
        schedule=None,
        speed_probe_cpus=None,
    )
    params.update(given)
    return params


def _probed(run, cpus):
    """run() with the CPU-speed probe (trials/speed_probe.py) on the server's CPUs: the result gains cpu_speed (the
    median of the probe's samples over the run) and throughput_per_speed (comparable between runs on a machine
    whose CPU speed changes by itself)."""
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import speed_probe

    handle, path = tempfile.mkstemp(prefix="tactician-speed-", suffix=".txt")
    os.close(handle)
    try:
        began = time.time()
        with speed_probe.SpeedProbe(cpus, path) as probe:
            result = run()
            samples = probe.samples()
        speed = speed_probe.speed_between(samples, began, time.time())
    finally:
        os.unlink(path)
    result["cpu_speed"] = round(speed, 3) if speed else None
    result["throughput_per_speed"] = result["throughput"] / speed if speed and result.get("throughput") else None
    return result


UNBOUNDED_OPERATIONS = loaddriver.JAVA_INT_MAX
"""operationcount of a run bounded only by time: YCSB reads the property as a Java int (CoreWorkload sizes the
zipfian generator from it), so a larger number fails the client at start; with inserts the driver lowers it to
what YCSB's key space holds (loaddriver.key_space_bound)."""


def _run_phase(params, the_plan, spec, phase, scans, extra=None, target=0):
    props = loaddriver.base_properties(
        spec.properties(), the_plan["threads"], target, status_interval=params.get("status_interval") or 10
    )
    props.update({k: loaddriver.to_text(v) for k, v in _store_properties(params, spec, scans).items()})
    props.update(extra or {})
    if phase == "load":
        props.pop("target", None)

    def run():
        return loaddriver.run(
            params.get("java") or "java",
            params["driver_home"],
            params["store"],
            phase,
            props,
            processes=the_plan["processes"],
            heap=params.get("heap") or "512m",
            timeout=params.get("timeout") or 3600,
            server_pids=_server_pids(params.get("server_pid_files") or []),
        )

    cpus = process.parse_cpus(params.get("speed_probe_cpus"), "speed_probe_cpus")
    result = _probed(run, cpus) if cpus else run()
    result["workload"] = the_plan["workload"]
    result["target"] = target
    return result
