"""Resource model accuracy on the bench node: held-out workloads (key distributions, read/update mixes, data sizes
and rates the calibration never ran) measured on the node and predicted by the calibrated model from the hit ratio
and the throughput the server reported, side by side, with accuracy = 1 - |predicted - observed| / observed.

    .venv/bin/ansible-playbook -i inventories/bench playbooks/lab_up.yml        # the bench node
    .venv/bin/ansible-playbook -i inventories/bench playbooks/calibrate.yml     # the model (once per hardware)
    .venv/bin/python benchmarks/resource_accuracy.py [--short] [--csv out.csv] [--markdown out.md]

The paper (Cruz et al., HBase) reports a mean accuracy of 94 % (sd 5.6) and 98.9-99.3 % for hotspot/zipfian.
As a baseline the same table shows a throughput-only model (usage = a + b * ops/s, a least-squares line over every
calibration point), which ignores the hit ratio: the gap between the two is what the hit ratio buys.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

from _common import ROOT, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.models import hit_ratio
from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import resource_model as rm
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import meter as meter_mod
from ansible_collections.tactician.nosql.plugins.module_utils.trials import calibration as calibrate

LAB = os.path.join(ROOT, ".lab", "bench")
MIXES = {
    "read only": {"readproportion": 1.0, "updateproportion": 0.0},
    "90/10 read/update": {"readproportion": 0.9, "updateproportion": 0.1},
    "50/50 read/update": {"readproportion": 0.5, "updateproportion": 0.5},
}
DISTRIBUTIONS = ("uniform", "zipfian", "hotspot", "latest")


def throughput_only(doc):
    """Baseline: usage = a + b * ops/s, a least-squares line over every calibration point (the hit ratio ignored)."""
    points = [p for p in doc["model"].get("points", []) if p.get("converged") is not False]
    xs = [float(p["throughput"]) for p in points]
    ys = [float(p["level"]) for p in points]
    mean_x, mean_y = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / max(
        sum((x - mean_x) ** 2 for x in xs), 1e-9
    )
    return lambda tput: mean_y + slope * (tput - mean_x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--model", default=os.path.join(LAB, "models", "cassandra-resource.json"))
    parser.add_argument("--address", default="127.0.0.31")
    parser.add_argument("--node", default="bench-cassandra1")
    parser.add_argument("--short", action="store_true", help="two distributions, one size, one rate")
    parser.add_argument("--sizes", type=float, nargs="+", default=[2.5], help="records as multiples of the cache")
    parser.add_argument("--levels", type=float, nargs="+", default=[30.0, 42.0], help="usage levels to aim at")
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--csv")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    started = time.time()
    data, metadata = modelstore.load_model(args.model, kind="resource", store="cassandra")
    model = rm.ResourceModel.from_dict(data)
    baseline = throughput_only({"model": data})
    cache_items = int(metadata.get("cache_items") or 0)
    if cache_items <= 0:
        sys.exit("model: %s does not say how many rows the cache holds (cache_items)" % args.model)
    with open(os.path.join(LAB, "secrets", "cassandra-password")) as handle:
        password = handle.read().split()[0]
    pid = calibrate.server_pid(os.path.join(LAB, "cassandra", args.node, "cassandra.pid"))
    distributions = ("uniform", "zipfian") if args.short else DISTRIBUTIONS
    sizes = args.sizes[:1] if args.short else args.sizes
    levels = args.levels[:1] if args.short else args.levels
    mixes = dict(list(MIXES.items())[:2]) if args.short else MIXES
    base = dict(
        store="cassandra",
        hosts=[args.address],
        port=9042,
        login_user="tactician",
        login_password=password,
        driver_home=os.path.join(LAB, "load-driver"),
        keyspace="tactician_calibrate",
        workload="a",
        threads=16,
        processes=1,
        heap="512m",
        timeout=600,
    )
    meter = meter_mod.CassandraMeter(base, args.address)
    rows = []
    try:
        for size in sizes:
            records = int(cache_items * size)
            calibrate.load_records(dict(base, properties={"requestdistribution": "uniform"}), records)
            for dist in distributions:
                for mix_name, mix in mixes.items():
                    expected_hit = hit_ratio.hit_ratio(
                        dist if dist in ("uniform", "zipfian", "hotspot") else "zipfian", records, cache_items
                    )
                    params = dict(base, properties=dict(mix, requestdistribution=dist, recordcount=records))
                    # Warm the cache for this key distribution first (unthrottled, not recorded).
                    calibrate.measure(params, meter, pid, 0, 2.0, 4.0)
                    for level in levels:
                        rate = int(model.max_throughput(expected_hit, mix["readproportion"], level))
                        point = calibrate.measure(params, meter, pid, rate, args.warmup, args.window)
                        hit = point["hit_ratio"] if point["hit_ratio"] is not None else 1.0
                        predicted = model.usage(hit, point["reads_per_s"], point["writes_per_s"])
                        naive = baseline(point["throughput"])
                        row = dict(
                            distribution=dist,
                            mix=mix_name,
                            records=records,
                            target=rate,
                            throughput=point["throughput"],
                            hit_ratio=hit,
                            observed=point["usage"],
                            predicted=round(predicted, 2),
                            accuracy=round(rm.accuracy(predicted, point["usage"]), 4),
                            baseline=round(naive, 2),
                            baseline_accuracy=round(rm.accuracy(naive, point["usage"]), 4),
                        )
                        rows.append(row)
                        print(
                            "%-8s %-18s %7d rows  %6.0f ops/s  hit %.3f  observed %5.1f %%  model %5.1f %% (%.1f %%)"
                            "  throughput-only %5.1f %% (%.1f %%)"
                            % (
                                dist,
                                mix_name,
                                records,
                                row["throughput"],
                                hit,
                                row["observed"],
                                row["predicted"],
                                100 * row["accuracy"],
                                row["baseline"],
                                100 * row["baseline_accuracy"],
                            ),
                            flush=True,
                        )
    finally:
        meter.close()
    table = [
        "| distribution | n | model accuracy (mean) | sd | min | throughput-only (mean) | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for dist in (*distributions, "all"):
        subset = [r for r in rows if dist in ("all", r["distribution"])]
        if not subset:
            continue
        acc = [r["accuracy"] for r in subset]
        base_acc = [r["baseline_accuracy"] for r in subset]
        table.append(
            "| %s | %d | %.1f %% | %.1f | %.1f %% | %.1f %% | %.2f |"
            % (
                dist,
                len(acc),
                100 * statistics.mean(acc),
                100 * (statistics.pstdev(acc) if len(acc) > 1 else 0.0),
                100 * min(acc),
                100 * statistics.mean(base_acc),
                statistics.mean(acc) / max(statistics.mean(base_acc), 1e-9),
            )
        )
    print()
    print("\n".join(table))
    print(
        "\npaper (Cruz et al.): mean 94 %% (sd 5.6); hardware profile %s; wall time %.0f s"
        % (metadata["hardware_profile"].get("name"), time.time() - started)
    )
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
