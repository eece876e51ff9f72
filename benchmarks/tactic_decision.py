# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Tactic advisor (seed 000, PaSTA): decision time per sample, accuracy, and what online learning buys after drift.

    .venv/bin/python benchmarks/tactic_decision.py            # 3,000 bootstrap examples, 1,000 held out, drift 2,000
    .venv/bin/python benchmarks/tactic_decision.py --short    # a tenth of each
    .venv/bin/python benchmarks/tactic_decision.py --short --markdown t.md --csv t.csv

- Decision time: TacticAdvisor.decide() on held-out samples - the triggered ones (SLA breach or saturation: the
  tree is asked) and all of them (untriggered ones answer "none" without it) - median and 99th percentile, against
  PaSTA's < 10 ms per sample. Learning one example (learn) is timed too.
- Accuracy on the held-out triggered samples of the knowledge base: the tree against the majority tactic.
- Drift: the world changes after the bootstrap - read-heavy CPU saturation now calls for add_node (the replicas
  are at their maximum) and low hit ratios for change_compaction. Prequential accuracy (decide, then learn the
  right tactic) over the drifted stream of the online tree against the same tree frozen after its bootstrap, on
  the stream's last half.
"""

from __future__ import annotations

import argparse
import collections
import csv
import statistics
import time

from _common import use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.models import advisor


def drifted(examples):
    """The knowledge base after the drift: the labels that changed."""
    out = []
    for x, label in examples:
        if label == "add_replica":
            label = "add_node"
        elif label == "resize_cache":
            label = "change_compaction"
        out.append((x, label))
    return out


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="a tenth of the examples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", help="write the table as Markdown")
    parser.add_argument("--csv", help="write the table as CSV")
    args = parser.parse_args()
    scale = 10 if args.short else 1
    train_n, test_n, drift_n = 3000 // scale, 1000 // scale, 2000 // scale
    started = time.time()
    base = advisor.knowledge_base(count=train_n + test_n, seed=args.seed)
    train, test = base[:train_n], base[train_n:]

    tactics = advisor.TacticAdvisor(seed=args.seed)
    learn_ms = []
    for x, label in train:
        t = time.perf_counter()
        tactics.learn(x, label, source="bootstrap")
        learn_ms.append(1000.0 * (time.perf_counter() - t))
    frozen = advisor.TacticAdvisor(seed=args.seed)
    frozen.bootstrap(train)

    decide_all, decide_triggered = [], []
    right = majority_right = triggered = 0
    labels = collections.Counter(label for _x, label in train if advisor.triggers(_x))
    majority = labels.most_common(1)[0][0]
    for x, label in test:
        t = time.perf_counter()
        decision = tactics.decide(x, now=0.0)
        elapsed = 1000.0 * (time.perf_counter() - t)
        decide_all.append(elapsed)
        if decision["triggered"]:
            decide_triggered.append(elapsed)
            triggered += 1
            right += decision["tactic"] == label
            majority_right += majority == label

    stream = drifted(advisor.knowledge_base(count=drift_n, seed=args.seed + 1))
    online_hits, frozen_hits = [], []
    for x, label in stream:
        if not advisor.triggers(x):
            continue
        online_hits.append(tactics.decide(x, now=0.0)["tactic"] == label)
        frozen_hits.append(frozen.decide(x, now=0.0)["tactic"] == label)
        tactics.learn(x, label, source="observed")
    half = len(online_hits) // 2
    online_late = statistics.mean(online_hits[half:])
    frozen_late = statistics.mean(frozen_hits[half:])

    target_ms = 10.0
    median_t = statistics.median(decide_triggered)
    p99_t = percentile(decide_triggered, 0.99)
    median_all = statistics.median(decide_all)
    accuracy, majority_accuracy = right / triggered, majority_right / triggered
    rows = [
        ("decision time, triggered samples, median (ms)", "PaSTA bound", target_ms, median_t, target_ms / median_t),
        ("decision time, triggered samples, p99 (ms)", "PaSTA bound", target_ms, p99_t, target_ms / p99_t),
        ("decision time, all samples, median (ms)", "PaSTA bound", target_ms, median_all, target_ms / median_all),
        ("learning one example, median (ms)", "-", None, statistics.median(learn_ms), None),
        (
            "accuracy on held-out triggered samples (%d)" % triggered,
            "majority (%s)" % majority,
            majority_accuracy,
            accuracy,
            accuracy / max(1e-9, majority_accuracy),
        ),
        (
            "accuracy after drift, last %d triggered samples" % (len(online_hits) - half),
            "frozen tree",
            frozen_late,
            online_late,
            online_late / max(1e-9, frozen_late),
        ),
    ]
    lines = [
        "| measure | baseline | ours | ratio (baseline / ours for times, ours / baseline else) |",
        "|---|---|---|---|",
    ]
    for measure, name, base_value, ours, ratio in rows:
        if "time" in measure:
            cells = (name + " %.0f" % base_value, "%.3f" % ours, "%.1f" % ratio)
        elif base_value is None:
            cells = (name, "%.3f" % ours, "-")
        else:
            cells = ("%s %.3f" % (name, base_value), "%.3f" % ours, "%.2f" % ratio)
        lines.append("| %s | %s | %s | %s |" % (measure, *cells))
    print("\n".join(lines))
    note = "bootstrap %d examples, held out %d, drifted stream %d; wall time %.1f s" % (
        train_n,
        test_n,
        drift_n,
        time.time() - started,
    )
    print("\n" + note)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n\n- %s\n" % note)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["measure", "baseline", "baseline_value", "ours", "ratio"])
            for measure, name, base_value, ours, ratio in rows:
                writer.writerow(
                    [
                        measure,
                        name,
                        "" if base_value is None else round(base_value, 5),
                        round(ours, 5),
                        "" if ratio is None else round(ratio, 4),
                    ]
                )


if __name__ == "__main__":
    main()
