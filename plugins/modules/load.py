#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: load
short_description: Drive a YCSB core workload (A to F) against Cassandra, a Redis Cluster or MongoDB
description:
  - Runs YCSB's own client (C(site.ycsb.Client), core workloads with YCSB's request distributions) with the
    collection's JVM bindings, in one or several client processes of many threads, so that it can saturate a
    node; reports throughput, latency percentiles (p50, p95, p99, p99.9) and failed operations per operation type,
    and the client's CPU time.
  - Install the driver first with role C(tactician.nosql.load_driver).
  - With O(reload=true) the data is destroyed and loaded again before the run (a cold evaluation).
  - Credentials go to the client in a properties file of mode 0600 that is deleted afterwards.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.any_store
options:
  store:
    description: Which store to drive.
    type: str
    choices: [cassandra, redis, mongodb]
    required: true
  driver_home:
    description: Where role C(tactician.nosql.load_driver) installed the driver.
    type: path
    required: true
  java:
    description: The java executable.
    type: path
    default: java
  workload:
    description: YCSB core workload letter.
    type: str
    choices: [a, b, c, d, e, f]
    default: a
  properties:
    description:
      - YCSB properties that override the workload's, for example C(recordcount), C(operationcount),
        C(requestdistribution) (uniform, zipfian, latest, hotspot), C(fieldcount), C(fieldlength), C(maxscanlength).
    type: dict
    default: {}
  phases:
    description: Load the records, run the operations, or both (in that order).
    type: list
    elements: str
    choices: [load, run]
    default: [run]
  reload:
    description: Destroy the data before the load phase (Cassandra TRUNCATE, Redis FLUSHALL on masters, MongoDB drop).
    type: bool
    default: false
  threads:
    description: Client threads in all (split over the processes).
    type: int
    default: 32
  processes:
    description: Client JVMs run side by side.
    type: int
    default: 1
  target:
    description: Target throughput in operations per second for all processes together; 0 runs unthrottled.
    type: int
    default: 0
  max_seconds:
    description:
      - Stop the run phase after this many seconds even if operations remain (with a large C(operationcount) in
        O(properties), a run of fixed length).
    type: int
  heap:
    description: Heap of each client JVM.
    type: str
    default: 512m
  timeout:
    description: Seconds a phase may take.
    type: int
    default: 3600
  hosts:
    description:
      - Nodes to connect to. Cassandra contact points (addresses), Redis cluster nodes (C(host:port)),
        or the MongoDB server (C(host:port)).
    type: list
    elements: str
    required: true
  keyspace:
    description: Cassandra keyspace of the YCSB table (created with O(replication_factor) when missing).
    type: str
    default: ycsb
  replication_factor:
    description: Replication factor of a keyspace the module creates.
    type: int
    default: 1
  consistency:
    description: Cassandra consistency level of reads and writes.
    type: str
    choices: [ONE, TWO, THREE, QUORUM, ALL, LOCAL_ONE, LOCAL_QUORUM]
    default: ONE
  database:
    description: MongoDB database of the YCSB collection.
    type: str
    default: ycsb
  schedule:
    description:
      - A schedule file (YAML or JSON) of phases (duration, mix, rate) to replay after the load phase, one client
        run per phase with that phase's mix and rate for its duration; O(workload) and O(properties) give the
        record layout and counts. See C(plugins/module_utils/schedules.py) for the format and the generators
        (HPC job queue, abrupt read/write switching, daily pattern).
    type: path
  server_pid_files:
    description: PID files of server processes on this host whose CPU time to report next to the client's.
    type: list
    elements: path
    default: []
  speed_probe_cpus:
    description:
      - The CPUs of a CPU-bound server on this host (taskset syntax such as C(1) or C(2-3), or C(upper-half)). A
        probe times a fixed piece of work on them every 50 ms during each phase (at real-time priority when run as
        root), and each result gains C(cpu_speed) and C(throughput_per_speed) - the throughput per unit of the
        speed the machine gave those CPUs, comparable between runs on a virtual machine whose CPU speed changes by
        itself.
      - Unset, no probe runs.
    type: str
attributes:
  check_mode:
    description: In check mode nothing runs and the module reports what it would do.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Load 100K rows and run workload C on a lab node, cold
  tactician.nosql.load:
    store: cassandra
    driver_home: "{{ lab_dir }}/load-driver"
    hosts: [127.0.0.1]
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
    workload: c
    phases: [load, run]
    reload: true
    properties: {recordcount: 100000, operationcount: 200000}
    threads: 64
  register: result
"""

RETURN = r"""
results:
  description: One entry per phase run.
  returned: success
  type: list
  elements: dict
  sample:
    - phase: run
      throughput: 6120.4
      runtime_ms: 32678
      failed: {}
      failed_total: 0
      not_found: {}
      not_found_total: 0
      client_cpu_s: 31.2
      cpu_speed: 41.7
      throughput_per_speed: 146.8
      operations: {read: {count: 200000, avg_ms: 5.1, p50_ms: 4.3, p95_ms: 10.2, p99_ms: 18.1, p999_ms: 41.0}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import any_store_argument_spec, fail
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **any_store_argument_spec(),
            store=dict(type="str", choices=list(loadrun.STORES), required=True),
            driver_home=dict(type="path", required=True),
            java=dict(type="path", default="java"),
            workload=dict(type="str", choices=list("abcdef"), default="a"),
            properties=dict(type="dict", default={}),
            phases=dict(type="list", elements="str", choices=["load", "run"], default=["run"]),
            reload=dict(type="bool", default=False),
            threads=dict(type="int", default=32),
            processes=dict(type="int", default=1),
            target=dict(type="int", default=0),
            max_seconds=dict(type="int"),
            heap=dict(type="str", default="512m"),
            timeout=dict(type="int", default=3600),
            hosts=dict(type="list", elements="str", required=True),
            keyspace=dict(type="str", default="ycsb", no_log=False),
            replication_factor=dict(type="int", default=1),
            consistency=dict(
                type="str", choices=["ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_ONE", "LOCAL_QUORUM"], default="ONE"
            ),
            database=dict(type="str", default="ycsb"),
            schedule=dict(type="path"),
            server_pid_files=dict(type="list", elements="path", default=[]),
            speed_probe_cpus=dict(type="str"),
        ),
        required_together=[["login_user", "login_password"]],
        supports_check_mode=True,
    )
    try:
        plan = loadrun.plan(module.params)
        schedule = loadrun.load_schedule(module.params)
        if schedule is not None:
            plan["schedule"] = [phase.to_dict() for phase in schedule.phases]
        if module.check_mode:
            module.exit_json(changed=False, results=[], plan=plan)
        if schedule is None:
            results = loadrun.execute(module.params, plan)
        else:
            results = loadrun.execute_schedule(module.params, plan, schedule)
    except TacticianError as exc:
        fail(module, exc)
    module.exit_json(changed=True, results=results, plan=plan)


if __name__ == "__main__":
    main()
