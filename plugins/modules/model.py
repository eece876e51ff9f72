#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: model
short_description: Build the prediction models - training designs, datasets, fitting and model files
description:
  - O(action=design) chooses training configurations over the parameter catalog (D-optimal design with linear and
    pairwise terms, or a Latin hypercube), drops those the catalog's memory budget refuses, and writes a design file
    (what C(playbooks/collect_training.yml) measures).
  - O(action=record) appends one measured point to a dataset (JSON lines) under a unique key; a key already there is
    left alone, so a collection resumes. O(action=dataset) lists the keys of a dataset.
  - O(action=fit) trains a model and saves it as a model file (JSON, no pickle) with its metadata - store, version,
    hardware profile, feature list, hash of the training data, library versions - and its accuracy on held-out
    points. O(kind=resource) from calibration data (C(playbooks/calibrate.yml)); O(kind=surrogate) from a dataset;
    O(kind=cluster_surrogate) from a dataset of measured clusters (node_predictions, nodes, rf, cl, complete_sets,
    read_ratio, ops_per_s), next to the naive sum of the nodes.
  - O(action=show) returns a model file's metadata.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  action:
    description: What to do.
    type: str
    choices: [design, record, dataset, fit, show]
    required: true
  kind:
    description: Which model O(action=fit) trains.
    type: str
    choices: [resource, surrogate, cluster_surrogate]
  store:
    description: Store the design or model is for.
    type: str
    choices: [cassandra, redis, mongodb]
    default: cassandra
  store_version:
    description: Version of the store (its catalog for a design; recorded in a model's metadata).
    type: str
    default: "5.0"
  parameters:
    description: Catalog parameters of a design or a surrogate (default for a surrogate - those in the dataset).
    type: list
    elements: str
  ranges:
    description:
      - Range per parameter of a design, C([low, high]) in the catalog's unit, or the allowed choices of an enum
        parameter. Default - the range of the papers where the catalog gives one, else the catalog's.
    type: dict
  points:
    description: Number of configurations of a design.
    type: int
    default: 20
  method:
    description: Design method.
    type: str
    choices: [d_optimal, lhs]
    default: d_optimal
  seed:
    description: Seed of the design and of the held-out split.
    type: int
    default: 0
  defaults:
    description:
      - Values of the default configuration that the catalog computes from the hardware (for Cassandra
        C(concurrent_compactors)), for a design's default point and a surrogate's empty configuration.
    type: dict
  catalog:
    description: The store's parameter catalog; set by the action plugin from the collection's catalog files.
    type: dict
  memory_mb:
    description: Memory of the node in MiB, for the catalog's memory budget of a design.
    type: int
  heap_mb:
    description: Heap of the node in MiB, for the catalog's heap budget of a design.
    type: int
  design_file:
    description: Where O(action=design) writes the design (YAML); unchanged when it already holds the same design.
    type: path
  dataset:
    description: Dataset file (JSON lines) for O(action=record), O(action=dataset) and O(kind=surrogate).
    type: path
  key:
    description: Unique key of the row O(action=record) appends.
    type: str
  row:
    description: The measured point O(action=record) appends (workload, config, hardware, ops_per_s, ...).
    type: dict
  data:
    description: Calibration data for O(kind=resource) - read, update, idle_usage, cache_items.
    type: dict
  model_file:
    description: Model file O(action=fit) writes and O(action=show) reads.
    type: path
  hardware:
    description:
      - Hardware profile the model is valid for (name, vcpu, ram_gb, disk_ssd, heap_mb). Missing numbers are read
        from this machine; the name defaults to C(<vcpu>cpu-<ram>g).
    type: dict
    default: {}
  test_share:
    description: Share of the configurations held out to measure a surrogate's accuracy.
    type: float
    default: 0.25
  max_other_cpu_share:
    description:
      - Training runs during which other work on the machine used more than this share of its CPU are left out
        (they measured that work as much as the store). Runs that did not record it are kept.
    type: float
    default: 0.1
  n_estimators:
    description: Trees of the surrogate's random forest.
    type: int
    default: 20
  max_depth:
    description: Depth of its trees.
    type: int
    default: 5
attributes:
  check_mode:
    description: In check mode nothing is written; the module reports what it would write.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: A D-optimal design of 18 Cassandra configurations
  tactician.nosql.model:
    action: design
    parameters: [concurrent_reads, concurrent_writes, memtable_heap_space, compaction]
    ranges: {memtable_heap_space: [32, 512]}
    points: 18
    heap_mb: 1024
    design_file: .lab/bench/designs/cassandra.yml

- name: Train the surrogate on the collected dataset
  tactician.nosql.model:
    action: fit
    kind: surrogate
    dataset: .lab/bench/datasets/cassandra-surrogate.jsonl
    model_file: .lab/bench/models/cassandra-surrogate.json
  register: surrogate

- name: What a model file is valid for
  tactician.nosql.model:
    action: show
    model_file: .lab/bench/models/cassandra-surrogate.json
"""

RETURN = r"""
design:
  description: The design (O(action=design)).
  returned: action is design
  type: dict
keys:
  description: Keys of the rows in the dataset (O(action=dataset)).
  returned: action is dataset
  type: list
  elements: str
metadata:
  description: The model's metadata (O(action=fit) and O(action=show)).
  returned: action is fit or show
  type: dict
evaluation:
  description: Accuracy on held-out points (O(kind=surrogate)) - r2, rmse, mae, rows held out.
  returned: action is fit and kind is surrogate or cluster_surrogate
  type: dict
summary:
  description: Lines that say what was built.
  returned: action is fit
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; JSON (which YAML readers accept) is the fallback
    yaml = None

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import training as modeling


def _design(module, p):
    if not p["parameters"]:
        module.fail_json(msg="parameters: give the catalog parameters of the design")
    design = modeling.make_design(
        p["store"],
        p["store_version"],
        p["parameters"],
        p["points"],
        method=p["method"],
        ranges=p["ranges"],
        seed=p["seed"],
        memory_mb=p["memory_mb"],
        heap_mb=p["heap_mb"],
        defaults=p["defaults"],
        catalog=p["catalog"],
    )
    changed = False
    if p["design_file"]:
        if yaml is not None:
            text = yaml.safe_dump(design, sort_keys=False, default_flow_style=False)
        else:
            text = json.dumps(design, indent=1) + "\n"
        try:
            with open(p["design_file"]) as handle:
                changed = handle.read() != text
        except OSError:
            changed = True
        if changed and not module.check_mode:
            os.makedirs(os.path.dirname(os.path.abspath(p["design_file"])), exist_ok=True)
            with open(p["design_file"], "w") as handle:
                handle.write(text)
    module.exit_json(changed=changed, design=design)


def _fit(module, p):
    hardware = modelstore.hardware_profile(**(p["hardware"] or {}))
    model_file = None if module.check_mode else p["model_file"]
    if not p["model_file"]:
        module.fail_json(msg="model_file: give the file action=fit writes")
    if p["kind"] == "resource":
        doc, summary = modeling.fit_resource(p["data"] or {}, p["store"], p["store_version"], hardware, model_file)
        module.exit_json(changed=not module.check_mode, metadata=doc["metadata"], summary=summary)
    if not p["dataset"]:
        module.fail_json(msg="dataset: give the dataset a surrogate is trained on")
    rows = modeling.read_dataset(p["dataset"])
    if p["kind"] == "cluster_surrogate":
        doc, evaluation, summary = modeling.fit_cluster(
            rows,
            p["store"],
            p["store_version"],
            hardware,
            test_share=p["test_share"],
            seed=p["seed"],
            n_estimators=p["n_estimators"],
            max_depth=p["max_depth"],
            model_file=model_file,
        )
        module.exit_json(
            changed=not module.check_mode, metadata=doc["metadata"], evaluation=evaluation, summary=summary
        )
    doc, evaluation, summary = modeling.fit_surrogate(
        rows,
        p["store"],
        p["store_version"],
        hardware,
        parameters=p["parameters"],
        ranges=p["ranges"],
        test_share=p["test_share"],
        seed=p["seed"],
        n_estimators=p["n_estimators"],
        max_depth=p["max_depth"],
        model_file=model_file,
        defaults=p["defaults"],
        catalog=p["catalog"],
        max_other_cpu_share=p["max_other_cpu_share"],
    )
    module.exit_json(changed=not module.check_mode, metadata=doc["metadata"], evaluation=evaluation, summary=summary)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", choices=["design", "record", "dataset", "fit", "show"], required=True),
            kind=dict(type="str", choices=["resource", "surrogate", "cluster_surrogate"]),
            store=dict(type="str", choices=["cassandra", "redis", "mongodb"], default="cassandra"),
            store_version=dict(type="str", default="5.0"),
            parameters=dict(type="list", elements="str"),
            ranges=dict(type="dict"),
            points=dict(type="int", default=20),
            method=dict(type="str", choices=["d_optimal", "lhs"], default="d_optimal"),
            seed=dict(type="int", default=0),
            defaults=dict(type="dict"),
            catalog=dict(type="dict"),
            memory_mb=dict(type="int"),
            heap_mb=dict(type="int"),
            design_file=dict(type="path"),
            dataset=dict(type="path"),
            key=dict(type="str", no_log=False),
            row=dict(type="dict"),
            data=dict(type="dict"),
            model_file=dict(type="path"),
            hardware=dict(type="dict", default={}),
            test_share=dict(type="float", default=0.25),
            max_other_cpu_share=dict(type="float", default=0.1),
            n_estimators=dict(type="int", default=20),
            max_depth=dict(type="int", default=5),
        ),
        required_if=[
            ["action", "record", ["dataset", "key", "row"]],
            ["action", "dataset", ["dataset"]],
            ["action", "fit", ["kind", "model_file"]],
            ["action", "show", ["model_file"]],
        ],
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["action"] == "design":
            _design(module, p)
        if p["action"] == "record":
            if module.check_mode:
                present = any(row.get("key") == p["key"] for row in modeling.read_dataset(p["dataset"]))
                module.exit_json(changed=not present)
            module.exit_json(changed=modeling.append_row(p["dataset"], p["key"], p["row"]))
        if p["action"] == "dataset":
            rows = modeling.read_dataset(p["dataset"])
            module.exit_json(changed=False, keys=[row.get("key") for row in rows], count=len(rows))
        if p["action"] == "fit":
            _fit(module, p)
        doc = modelstore.read_model(p["model_file"])
        module.exit_json(changed=False, kind=doc["kind"], metadata=doc["metadata"])
    except TacticianError as exc:
        fail(module, exc)


if __name__ == "__main__":
    main()
