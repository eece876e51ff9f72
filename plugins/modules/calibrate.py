#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: calibrate
short_description: Measure a live node for the resource-usage model (cache hit ratio and throughput to usage)
description:
  - Calibration runs of the resource-usage model (Cruz et al.) on one node, driven by the collection's load driver
    (role C(tactician.nosql.load_driver)) and measured on the server itself, after a warm-up, over a window, from
    the server's counters (operations served, cache hits) and its process's CPU time.
  - Usage is user + system CPU of the server process plus its accounted block-I/O wait, as a percentage of all the
    machine's CPUs.
  - O(action=read_levels) reloads O(records) rows, then finds for each usage level in O(levels) the read throughput
    that reaches it by binary search (the unthrottled maximum first); levels the node cannot reach are reported as
    not converged.
  - O(action=rates) measures the given target rates of the workload as it is (update model points, or held-out
    workloads to check a model), optionally after reloading O(records) rows.
  - O(action=idle) measures the server with no load from the driver over O(window).
  - O(action=cache) reports the cache's capacity, size and entries, to turn a cache size into records.
  - The data in O(keyspace) is destroyed and loaded again. Use a keyspace of its own on a node that serves nothing
    else while it is measured.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.any_store
options:
  store:
    description: Store of the node. Cassandra is supported (row, key or chunk cache counters over CQL).
    type: str
    choices: [cassandra]
    default: cassandra
  action:
    description: What to measure.
    type: str
    choices: [read_levels, rates, idle, cache]
    required: true
  address:
    description: Address of the node to measure (the load goes to this node only).
    type: str
    required: true
  pid_file:
    description: PID file of the server process whose CPU is measured.
    type: path
    required: true
  driver_home:
    description: Where role C(tactician.nosql.load_driver) installed the driver.
    type: path
    required: true
  java:
    description: The java executable.
    type: path
    default: java
  keyspace:
    description: Keyspace of the YCSB table used for the measurements.
    type: str
    default: tactician_calibrate
  cache:
    description: Which cache's hit ratio is the model's input.
    type: str
    choices: [row_cache, key_cache, chunk_cache]
    default: row_cache
  records:
    description: Rows to load before measuring (destroying the previous data). Required for O(action=read_levels).
    type: int
  workload:
    description: YCSB core workload letter of the measured load (O(action=read_levels) always reads only).
    type: str
    choices: [a, b, c, d, e, f]
    default: c
  properties:
    description: YCSB properties, for example C(requestdistribution) or C(readproportion) and C(updateproportion).
    type: dict
    default: {}
  levels:
    description: Target usage levels in percent for O(action=read_levels).
    type: list
    elements: float
    default: [5, 20, 40, 60, 80]
  rates:
    description: Target rates in ops/s for O(action=rates); 0 runs unthrottled.
    type: list
    elements: int
    default: []
  warmup:
    description: Seconds of load before the window starts.
    type: float
    default: 4
  window:
    description: Seconds over which the server is measured.
    type: float
    default: 8
  tolerance:
    description: A probe within this many usage points of the level ends its binary search.
    type: float
    default: 2.5
  max_probes:
    description: Probes per level at most.
    type: int
    default: 5
  threads:
    description: Client threads.
    type: int
    default: 16
  heap:
    description: Heap of the client JVM.
    type: str
    default: 512m
attributes:
  check_mode:
    description: In check mode nothing is loaded or measured; the module reports what it would do.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
notes:
  - Timings are measured on whatever else runs on the machine; calibrate on a quiet node.
"""

EXAMPLES = r"""
- name: Read-model points of one data size on a lab node
  tactician.nosql.calibrate:
    action: read_levels
    address: 127.0.0.31
    pid_file: "{{ lab_dir }}/cassandra/bench-cassandra1/cassandra.pid"
    driver_home: "{{ lab_dir }}/load-driver"
    login_user: tactician
    login_password: "{{ cassandra_password }}"
    records: 20000
    properties: {requestdistribution: uniform}
  register: points

- name: Update-model points
  tactician.nosql.calibrate:
    action: rates
    address: 127.0.0.31
    pid_file: "{{ lab_dir }}/cassandra/bench-cassandra1/cassandra.pid"
    driver_home: "{{ lab_dir }}/load-driver"
    login_user: tactician
    login_password: "{{ cassandra_password }}"
    workload: a
    properties: {readproportion: 0, updateproportion: 1, requestdistribution: uniform}
    rates: [500, 1000, 2000, 4000]
"""

RETURN = r"""
levels:
  description: For O(action=read_levels), one entry per level (throughput found, usage measured, converged).
  returned: action is read_levels
  type: list
  elements: dict
  sample: [{level: 20, throughput: 2380.5, usage: 19.4, converged: true, hit_ratio: 0.71, records: 20000}]
hit_ratio:
  description: Hit ratio the server measured over all probes of O(action=read_levels).
  returned: action is read_levels
  type: float
max:
  description: The unthrottled measurement of O(action=read_levels).
  returned: action is read_levels
  type: dict
points:
  description: One measurement per rate for O(action=rates), and every probe for O(action=read_levels).
  returned: success
  type: list
  elements: dict
  sample: [{target: 1000, throughput: 998.2, usage: 11.5, hit_ratio: 0.62, reads_per_s: 0, writes_per_s: 998.2}]
usage:
  description: For O(action=idle), the server's usage in percent of the machine with no load.
  returned: action is idle
  type: float
cache:
  description: For O(action=cache), the cache's capacity_bytes, size_bytes and entries.
  returned: action is cache
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import (
    any_store_argument_spec,
    fail,
    fail_imports,
)
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import meter as meter_mod
from ansible_collections.tactician.nosql.plugins.module_utils.trials import calibration as calibrate


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **any_store_argument_spec(),
            store=dict(type="str", choices=["cassandra"], default="cassandra"),
            action=dict(type="str", choices=["read_levels", "rates", "idle", "cache"], required=True),
            address=dict(type="str", required=True),
            pid_file=dict(type="path", required=True),
            driver_home=dict(type="path", required=True),
            java=dict(type="path", default="java"),
            keyspace=dict(type="str", default="tactician_calibrate", no_log=False),
            cache=dict(type="str", choices=["row_cache", "key_cache", "chunk_cache"], default="row_cache"),
            records=dict(type="int"),
            workload=dict(type="str", choices=list("abcdef"), default="c"),
            properties=dict(type="dict", default={}),
            levels=dict(type="list", elements="float", default=[5, 20, 40, 60, 80]),
            rates=dict(type="list", elements="int", default=[]),
            warmup=dict(type="float", default=4),
            window=dict(type="float", default=8),
            tolerance=dict(type="float", default=2.5),
            max_probes=dict(type="int", default=5),
            threads=dict(type="int", default=16),
            heap=dict(type="str", default="512m"),
        ),
        required_together=[["login_user", "login_password"]],
        required_if=[["action", "read_levels", ["records"]]],
        supports_check_mode=True,
    )
    p = module.params
    fail_imports(module, cql.missing_libraries())
    problems = []
    if p["records"] is not None and p["records"] < 1:
        problems.append("records: must be >= 1, got %d" % p["records"])
    if any(level <= 0 or level > 100 for level in p["levels"]):
        problems.append("levels: every level must be in (0, 100] percent, got %s" % p["levels"])
    if any(rate < 0 for rate in p["rates"]):
        problems.append("rates: every rate must be >= 0 ops/s (0 = unthrottled), got %s" % p["rates"])
    if p["action"] == "rates" and not p["rates"]:
        problems.append("rates: give at least one rate for action=rates")
    if p["warmup"] < 0 or p["window"] <= 0:
        problems.append("warmup, window: warmup >= 0 and window > 0 seconds, got %s, %s" % (p["warmup"], p["window"]))
    if problems:
        module.fail_json(msg="; ".join(problems))
    load_params = dict(
        store=p["store"],
        hosts=[p["address"]],
        port=p["port"],
        login_user=p["login_user"],
        login_password=p["login_password"],
        tls=p["tls"],
        ca_file=p["ca_file"],
        client_cert_file=p["client_cert_file"],
        client_key_file=p["client_key_file"],
        validate_certs=p["validate_certs"],
        check_hostname=p["check_hostname"],
        driver_home=p["driver_home"],
        java=p["java"],
        keyspace=p["keyspace"],
        workload="c" if p["action"] == "read_levels" else p["workload"],
        properties=dict(p["properties"]),
        threads=p["threads"],
        processes=1,
        heap=p["heap"],
        timeout=600,
    )
    if module.check_mode:
        module.exit_json(changed=False, points=[], would=dict(action=p["action"], records=p["records"]))
    lines = []
    try:
        pid = calibrate.server_pid(p["pid_file"])
        meter = meter_mod.CassandraMeter(load_params, p["address"], cache=p["cache"])
        try:
            if p["action"] == "cache":
                capacity, size, entries = meter.cache_entries()
                module.exit_json(changed=False, cache=dict(capacity_bytes=capacity, size_bytes=size, entries=entries))
            if p["action"] == "idle":
                module.exit_json(changed=False, usage=calibrate.measure_idle(pid, p["window"]))
            if p["action"] == "read_levels":
                result = calibrate.calibrate_hit_ratio(
                    load_params_with_load(load_params, p["records"]),
                    meter,
                    pid,
                    p["records"],
                    levels=p["levels"],
                    warmup_s=p["warmup"],
                    window_s=p["window"],
                    tolerance=p["tolerance"],
                    max_probes=p["max_probes"],
                    progress=lines.append,
                )
                module.exit_json(
                    changed=True,
                    levels=result["levels"],
                    hit_ratio=result["hit_ratio"],
                    max=result["max"],
                    points=result["probes"],
                    progress=lines,
                )
            if p["records"]:
                calibrate.load_records(load_params, p["records"])
                load_params["properties"]["recordcount"] = p["records"]
            points = calibrate.measure_rates(
                load_params, meter, pid, p["rates"], p["warmup"], p["window"], progress=lines.append
            )
            module.exit_json(changed=True, points=points, progress=lines)
        finally:
            meter.close()
    except TacticianError as exc:
        fail(module, exc, progress=lines)


def load_params_with_load(load_params, records):
    """Reload the data of a read-levels run (the data size is what sets the hit ratio)."""
    calibrate.load_records(load_params, records)
    return load_params


if __name__ == "__main__":
    main()
