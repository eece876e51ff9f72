#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: predict
short_description: Forecast the workload, predict a node's resource usage, or predict throughput of configurations
description:
  - O(mode=forecast) forecasts the workload vector (read ratio, throughput, share of each operation) from the history
    store, by ARIMA (d = 1, p and q chosen by BIC), a Markov chain over discretized states, the last value (the
    baseline), or a known schedule (a perfect forecast); O(method=auto) backtests the first three and uses the one
    with the longest lookahead. It backtests the method on the same history and reports
    the share of predictions within 10 % of the actual value at each horizon (1, 2, 5, 15 minutes by default), and
    the lookahead - the longest horizon whose accuracy is at least O(threshold).
  - O(mode=resource) predicts a node's usage (CPU, user + system + I/O wait, % of the node) from the cache hit ratio
    and the throughput with a calibrated resource model (C(playbooks/calibrate.yml)), and with O(cap) the largest
    throughput that keeps the node under that usage.
  - O(mode=performance) predicts the ops/s of configurations for a workload with a surrogate model
    (C(playbooks/collect_training.yml) then M(tactician.nosql.model) action=fit), per node and, with O(cluster), for
    the cluster.
  - A model file whose store, version or hardware profile does not match what is asked is refused with an error
    that names the field.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  mode:
    description: What to predict.
    type: str
    choices: [forecast, resource, performance]
    required: true
  history:
    description:
      - History store to read the samples from (a SQLite path or C(sqlite:///path)); O(mode=forecast).
      - Or a PostgreSQL URL C(postgresql://user@host/database?sslmode=verify-full&...) that several controllers
        share, its password from libpq's password file or E(PGPASSWORD) (never in the URL).
      - Or C(prometheus://host:port?records=PATH_OR_URL) (C(prometheus+https://) with TLS) - samples read from a
        Prometheus server at every T_d step (docs/monitoring.md), configurations and state kept in the C(records)
        history.
    type: str
  store:
    description: Store of the samples or of the model.
    type: str
    choices: [cassandra, redis, mongodb]
  cluster:
    description: Cluster name in the history (O(mode=forecast)).
    type: str
  node:
    description: Node of the samples; C(cluster) is the whole cluster's aggregate.
    type: str
    default: cluster
  last:
    description: Samples read from the history, newest last.
    type: int
    default: 1000
  method:
    description: Forecasting method.
    type: str
    choices: [auto, arima, markov, last_value, schedule]
    default: auto
  step:
    description: Decision step T_d in seconds.
    type: float
    default: 30
  horizon:
    description: Seconds to forecast; default the lookahead the backtest supports.
    type: float
  horizons:
    description: Horizons of the accuracy backtest in seconds.
    type: list
    elements: float
    default: [60, 120, 300, 900]
  threshold:
    description: Accuracy a horizon needs to be part of the lookahead.
    type: float
    default: 0.7
  backtest:
    description: Measure the method's accuracy on the history before forecasting.
    type: bool
    default: true
  schedule_file:
    description: A schedule (YAML or JSON) or job queue for O(method=schedule).
    type: path
  schedule_start:
    description: Epoch seconds when the schedule started; the forecast starts at the current step of it.
    type: float
  model_file:
    description: Resource model (O(mode=resource)) or surrogate (O(mode=performance)) file.
    type: path
  hardware_profile:
    description: When set, the model must have been built on the hardware profile of this name.
    type: str
  hit_ratio:
    description: Cache hit ratio of the workload (O(mode=resource)).
    type: float
  throughput:
    description: Total ops/s of the workload (O(mode=resource)); split by O(read_ratio).
    type: float
  read_ratio:
    description: Share of reads (O(mode=resource)); 1 when not given.
    type: float
  read_throughput:
    description: Read ops/s, instead of O(throughput).
    type: float
  update_throughput:
    description: Update ops/s, with O(read_throughput).
    type: float
  cap:
    description: Usage cap in percent; the result has the largest throughput under it.
    type: float
  workload:
    description:
      - Workload of O(mode=performance) - mix (operation to share), requestdistribution, records, record_bytes,
        threads.
    type: dict
  configs:
    description: Configurations to predict (catalog names to values); an empty one is the default configuration.
    type: list
    elements: dict
    default: [{}]
  hardware:
    description: Hardware numbers that differ from the model's profile (vcpu, ram_gb, disk_ssd, heap_mb).
    type: dict
  store_version:
    description: Version of the store the surrogate must be for.
    type: str
  topology:
    description: Cluster of O(mode=performance) - nodes, rf, cl, complete_sets.
    type: dict
  cluster_model_file:
    description: Cluster model file; without it the cluster's ops/s is the naive sum of its nodes.
    type: path
attributes:
  check_mode:
    description: Predicting changes nothing; it runs in check mode too.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Forecast the lab Cassandra cluster's workload with ARIMA and the lookahead it supports
  tactician.nosql.predict:
    mode: forecast
    history: "{{ tactician_lab_dir }}/history.sqlite3"
    store: cassandra
    cluster: tactician-lab
  register: ahead

- name: Usage at 3000 ops/s, 90 % reads, hit ratio 0.8, and the most a node takes under 60 %
  tactician.nosql.predict:
    mode: resource
    model_file: .lab/bench/models/cassandra-resource.json
    hit_ratio: 0.8
    throughput: 3000
    read_ratio: 0.9
    cap: 60

- name: Predicted ops/s of two configurations for YCSB A
  tactician.nosql.predict:
    mode: performance
    model_file: .lab/bench/models/cassandra-surrogate.json
    workload: {mix: {read: 0.5, update: 0.5}, requestdistribution: zipfian, records: 20000}
    configs:
      - {}
      - {concurrent_writes: 64, memtable_heap_space: 256}
"""

RETURN = r"""
forecast:
  description: O(mode=forecast) - future times and the values of each field of the workload vector.
  returned: mode is forecast
  type: dict
accuracy:
  description: O(mode=forecast) - share of backtest predictions within 10 % per field and horizon.
  returned: mode is forecast
  type: list
  elements: dict
lookahead:
  description: O(mode=forecast) - lookahead_s, lookahead_steps and the reason.
  returned: mode is forecast
  type: dict
usage:
  description: O(mode=resource) - predicted usage in percent.
  returned: mode is resource and a throughput is given
  type: float
max_throughput:
  description: O(mode=resource) - largest ops/s under O(cap).
  returned: mode is resource and cap is given
  type: float
ops_per_s:
  description: O(mode=performance) - predicted ops/s per configuration, one node.
  returned: mode is performance
  type: list
  elements: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.models import predict
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules


def _forecast(module, p):
    schedule = None
    position = 0
    samples = None
    if p["method"] == "schedule":
        if not p["schedule_file"]:
            module.fail_json(msg="schedule_file: method schedule needs a schedule file or job queue")
        schedule = schedules.load_schedule(p["schedule_file"])
        if p["schedule_start"] is not None:
            position = max(0, int((time.time() - p["schedule_start"]) // p["step"]))
    else:
        missing = [name for name in ("history", "store", "cluster") if not p[name]]
        if missing:
            module.fail_json(msg="%s: needed to read the history for mode forecast" % ", ".join(missing))
        with history_store.open_history(p["history"], create=False, readonly=True) as store:
            # A Prometheus history is read at the forecast's own step: every step a real sample, none filled in.
            step = {"window_s": float(p["step"])} if isinstance(store, history_store.PrometheusHistory) else {}
            samples = store.samples(store=p["store"], cluster=p["cluster"], node=p["node"], last=p["last"], **step)
    result = predict.forecast_workload(
        samples=samples,
        schedule=schedule,
        schedule_position=position,
        method=p["method"],
        step_s=p["step"],
        horizon_s=p["horizon"],
        horizons_s=p["horizons"],
        threshold=p["threshold"],
        backtest=p["backtest"],
    )
    module.exit_json(changed=False, **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", choices=["forecast", "resource", "performance"], required=True),
            history=dict(type="str"),
            store=dict(type="str", choices=["cassandra", "redis", "mongodb"]),
            cluster=dict(type="str"),
            node=dict(type="str", default="cluster"),
            last=dict(type="int", default=1000),
            method=dict(type="str", choices=list(predict.FORECAST_METHODS), default="auto"),
            step=dict(type="float", default=30),
            horizon=dict(type="float"),
            horizons=dict(type="list", elements="float", default=[60, 120, 300, 900]),
            threshold=dict(type="float", default=0.7),
            backtest=dict(type="bool", default=True),
            schedule_file=dict(type="path"),
            schedule_start=dict(type="float"),
            model_file=dict(type="path"),
            hardware_profile=dict(type="str"),
            hit_ratio=dict(type="float"),
            throughput=dict(type="float"),
            read_ratio=dict(type="float"),
            read_throughput=dict(type="float"),
            update_throughput=dict(type="float"),
            cap=dict(type="float"),
            workload=dict(type="dict"),
            configs=dict(type="list", elements="dict", default=[{}]),
            hardware=dict(type="dict"),
            store_version=dict(type="str"),
            topology=dict(type="dict"),
            cluster_model_file=dict(type="path"),
        ),
        required_if=[
            ["mode", "resource", ["model_file", "hit_ratio"]],
            ["mode", "performance", ["model_file", "workload"]],
        ],
        supports_check_mode=True,
    )
    p = module.params
    if p["step"] <= 0:
        module.fail_json(msg="step: %r is not allowed; choose seconds > 0" % p["step"])
    if not 0 < p["threshold"] <= 1:
        module.fail_json(msg="threshold: %r is not allowed; choose a share in (0, 1]" % p["threshold"])
    try:
        if p["mode"] == "forecast":
            _forecast(module, p)
        if p["mode"] == "resource":
            result = predict.predict_resource(
                p["model_file"],
                p["hit_ratio"],
                throughput=p["throughput"],
                read_ratio=p["read_ratio"],
                read_throughput=p["read_throughput"],
                update_throughput=p["update_throughput"],
                cap=p["cap"],
                store=p["store"],
                hardware_profile=p["hardware_profile"],
            )
            module.exit_json(changed=False, **result)
        result = predict.predict_performance(
            p["model_file"],
            p["workload"],
            p["configs"],
            hardware=p["hardware"],
            store=p["store"],
            store_version=p["store_version"],
            hardware_profile=p["hardware_profile"],
            cluster=p["topology"],
            cluster_model_file=p["cluster_model_file"],
        )
        module.exit_json(changed=False, **result)
    except TacticianError as exc:
        fail(module, exc)


if __name__ == "__main__":
    main()
