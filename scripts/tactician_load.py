"""Command line of the collection's YCSB-compatible load driver (the same engine as module tactician.nosql.load).

  scripts/tactician-load --store cassandra --hosts 127.0.0.1 --user cassandra --workload c \
      --phases load run --reload -p recordcount=100000 -p operationcount=200000 --threads 64

The password is read from the environment variable TACTICIAN_LOGIN_PASSWORD or from --password-file, never from
the command line. Prints one line per phase and, with --json, the full results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="tactician-load", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--store", required=True, choices=loadrun.STORES)
    parser.add_argument("--hosts", nargs="+", required=True, help="contact points / host:port nodes")
    parser.add_argument("--port", type=int, default=9042, help="Cassandra CQL port")
    parser.add_argument("--user", help="login user (password: TACTICIAN_LOGIN_PASSWORD or --password-file)")
    parser.add_argument("--password-file", help="file whose first line is the password")
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca-file")
    parser.add_argument("--workload", default="a", choices=list("abcdef"))
    parser.add_argument("-p", dest="props", action="append", default=[], metavar="NAME=VALUE", help="YCSB property")
    parser.add_argument("--phases", nargs="+", default=["run"], choices=["load", "run"])
    parser.add_argument("--reload", action="store_true", help="destroy the data before loading")
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--target", type=int, default=0, help="ops/s for all processes (0: unthrottled)")
    parser.add_argument("--keyspace", default="ycsb")
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--consistency", default="ONE")
    parser.add_argument("--database", default="ycsb")
    parser.add_argument("--auth-source", default="admin")
    parser.add_argument("--heap", default="512m")
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--java", default="java")
    parser.add_argument("--driver-home", default=os.path.join(ROOT, ".lab", "load-driver"))
    parser.add_argument("--schedule", help="schedule file of phases to replay after the load phase")
    parser.add_argument("--server-pid-file", action="append", default=[], help="measure this server's CPU too")
    parser.add_argument("--json", action="store_true", help="print the full results as JSON")
    return parser.parse_args(argv)


def report_phase(result):
    print(
        "  phase %d %s: target %d ops/s, driven %.0f ops/s, read ratio %.2f, %d failed, %d reads found no row"
        % (
            result["schedule_index"],
            result["label"] or "",
            result["target"],
            result["throughput"] or 0.0,
            result["read_ratio"],
            result["failed_total"],
            result.get("not_found_total") or 0,
        ),
        flush=True,
    )


def main(argv=None):
    args = parse_args(argv)
    password = os.environ.get("TACTICIAN_LOGIN_PASSWORD")
    if args.password_file:
        with open(args.password_file) as handle:
            password = handle.readline().strip()
    props = {}
    for item in args.props:
        name, sep, value = item.partition("=")
        if not sep:
            sys.exit("-p: %r is not NAME=VALUE" % item)
        props[name.strip()] = value.strip()
    params = dict(
        store=args.store,
        hosts=args.hosts,
        port=args.port,
        login_user=args.user,
        login_password=password,
        tls=args.tls,
        ca_file=args.ca_file,
        workload=args.workload,
        properties=props,
        phases=args.phases,
        reload=args.reload,
        threads=args.threads,
        processes=args.processes,
        target=args.target,
        keyspace=args.keyspace,
        replication_factor=args.replication_factor,
        consistency=args.consistency,
        database=args.database,
        auth_source=args.auth_source,
        heap=args.heap,
        timeout=args.timeout,
        java=args.java,
        driver_home=args.driver_home,
        server_pid_files=args.server_pid_file,
        schedule=args.schedule,
    )
    try:
        the_plan = loadrun.plan(params)
        schedule = loadrun.load_schedule(params)
        if schedule is None:
            results = loadrun.execute(params, the_plan)
        else:
            results = loadrun.execute_schedule(params, the_plan, schedule, on_phase=report_phase)
    except TacticianError as exc:
        sys.exit("tactician-load: %s" % exc)
    for result in results:
        ops = ", ".join(
            "%s %d (p50 %s p99 %s p99.9 %s ms)"
            % (name, op["count"], op.get("p50_ms"), op.get("p99_ms"), op.get("p999_ms"))
            for name, op in sorted(result["operations"].items())
        )
        print(
            "%s workload %s %s: %.0f ops/s over %.1f s, %d failed, client CPU %.1f s, server CPU %s s; %s"
            % (
                args.store,
                result["workload"],
                result["phase"],
                result["throughput"] or 0.0,
                (result["runtime_ms"] or 0.0) / 1000.0,
                result["failed_total"],
                result["client_cpu_s"],
                result["server_cpu_s"],
                ops,
            )
        )
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    return 0 if all(r["failed_total"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
