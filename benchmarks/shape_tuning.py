# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Surrogate + GA on the bench node shape, re-measured side by side: the configuration the genetic search finds on
the shape surrogate (benchmarks/shape_training.py) against the defaults, with the defaults against themselves as
the noise floor, in one run, in turns.

The search: per workload, the GA (planning/tuner.py) on the surrogate's prediction, once with each compression chunk
length of the twin tables held fixed (4 and 16 KiB: the tables of the same rows written at each), the live knobs
free; the higher prediction is the tuned configuration. The surrogate was fitted on other runs (its training rows),
so this comparison takes no part in the tuning.

The measurement: rounds of three client runs, one per arm (defaults, tuned, defaults again), the order rotated
each round (a Latin square over every three rounds) so that no arm always follows another; each run is one client
on the arm's table with the arm's live knobs applied, its first settle seconds left out. Per arm, the ratio to the
defaults of the same round, the geometric mean over rounds with a 95 % interval (t on the logarithms); "defaults
again" is the A/A floor of the same design. Node CPU and client-side CPU per arm beside the throughput.

With --design pairs, two nodes side by side in adjacent windows instead of rounds (the interleaved trials of TUNA
and of Abedi & Brecht, across two machines): the bench node always runs the defaults (A), the tuned node (B) first
the same defaults on its own copy of the same rows (the node A/A: the floor, and what the tuned node does better
than the bench node whatever it runs), then the tuned configuration; with --latest, the latest node then takes B's
place on cassandra_latest. Each phase is --rounds pairs of windows in ABBA order, so no pair is more than two
windows apart. Every comparison is given as measured and with the node A/A's ratio taken out (a Welch interval on
the logarithms).

A pairs phase may also change the tuned node itself, with the bench node on the defaults beside it: --ucs switches
its table's compaction strategy (ALTER TABLE), --node-phase restarts it with other cassandra.yaml keys or another
heap, reads its 4 KiB twin table, or compacts that table into one SSTable (nodetool compact). Each step's price
(seconds; for a compaction its node CPU and bytes written, and the SSTables before and after) is kept beside the
table, and what the run changed on the tuned node is put back at its end.

    .venv/bin/python benchmarks/shape_tuning.py --workloads b --rounds 6
    .venv/bin/python benchmarks/shape_tuning.py --workloads b --design pairs --rounds 8 --latest --warmup-s 600
    .venv/bin/python benchmarks/shape_tuning.py --workloads b --design pairs --rounds 4 --no-tuned --warmup-s 300 \
        --table-state --node-phase heap=512M --node-phase heap=512M+chunk=4+compact
    .venv/bin/python benchmarks/shape_tuning.py --render .lab/bench/shape-tuning/shape-tuning-<stamp>.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import sys
import time

import knob_effects as ke
import shape_racing
import shape_training as st
import yaml
from _common import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.models import model_files as modelstore
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate as sg
from ansible_collections.tactician.nosql.plugins.module_utils.planning import tuner
from ansible_collections.tactician.nosql.plugins.module_utils.trials import designs, speed_probe

SHIPPED = os.path.join(ROOT, "catalog", "models", "cassandra-shape.json")
ARMS = ("defaults", "tuned", "defaults again")
# With --latest: the experts' configuration (Cassandra 5.0.9's conf/cassandra_latest.yaml) on a node of its own.
LATEST = "cassandra_latest"
ARMS_LATEST = ("defaults", "tuned", LATEST, "defaults again")
# With --tuned-node: the tuned configuration on a node of its own (its table's page cache its own).
TUNED = "tuned"
# With --raced: the best configuration of a race on the node shape (shape_racing.py), on the tuned node; on the bti
# twin node (inventories/bench-bti) when the race had the SSTable format in its space and its best reads BTI files.
RACED = "raced"
BTI = "bti"
DESIGNS = ("rounds", "pairs", "concurrent")
# --design concurrent: the pairs' phases, but each pair's two windows at the same time, one client per node.
CONCURRENT = "concurrent"
PAIRED = ("pairs", CONCURRENT)
# --design pairs: the phase in which both nodes run the defaults.
NODE_AA = "node A/A"
# A per-table knob that leaves state behind: a pairs phase with it switches the tuned node's table to the unified
# compaction strategy with these scaling_parameters (ALTER TABLE, no restart) before the phase, and waits for the
# compactions that starts; the switch's time, CPU and writes are its price. Switched back at the end of the run.
UCS = "compaction.scaling_parameters"
UCS_PARAMETERS = re.compile(r"^(N|[LT]\d+|-?\d+)$")
# A phase of the tuned node's own (--node-phase): cassandra.yaml keys and a heap size it restarts with (through the
# lab role), its 4 KiB twin table, and a major compaction of the table it reads (priced); put back at the run's end.
NODE_SETTINGS = "cassandra.yaml"
HEAP = "heap"
COMPACT = "major compaction"
NODE_PHASE_KEYS = (NODE_SETTINGS, HEAP, COMPACT)
SETTING_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
HEAP_SIZE = re.compile(r"^[1-9][0-9]*[MG]$")
# The ways to pair the windows of a phase, and the throughput each takes: the one whose node A/A is the narrowest
# is chosen on the node A/A alone and then read for every phase (as knob_effects.py does).
PAIR_ESTIMATORS = {
    "pairs, raw": ("ops_s", designs.pair_ratios),
    "pairs, per CPU speed": ("ops_per_speed", designs.pair_ratios),
    "blocks, raw": ("ops_s", designs.block_ratios),
    "blocks, per CPU speed": ("ops_per_speed", designs.block_ratios),
}


def node_of(config):
    """The bench node an arm's configuration runs on (its "node" entry; the bench node when it has none)."""
    return {LATEST: ke._shape.LATEST_NODE, TUNED: ke._shape.TUNED_NODE, BTI: ke._shape.BTI_NODE}.get(
        config.get("node"), ke._shape.BENCH_NODE
    )


def ucs_arm(scaling):
    """The name of a --ucs phase."""
    return "UCS %s" % scaling


def ucs_options(scaling):
    """The CQL compaction map of the unified compaction strategy with these scaling_parameters."""
    return ke._shape.cql_map({"class": "UnifiedCompactionStrategy", "scaling_parameters": scaling})


def live_part(config):
    """The knobs of an arm's configuration that apply_config sets live (not the table, node, compaction, or what
    the node restarts with)."""
    return {k: v for k, v in config.items() if k not in (st.CHUNK, "node", UCS, shape_racing.FORMAT, *NODE_PHASE_KEYS)}


def node_phase_arm(spec):
    """The name of a --node-phase phase."""
    return "tuned node: %s" % spec


def parse_node_phase(spec):
    """A --node-phase value (parts joined by "+": NAME=VALUE of cassandra.yaml, heap=SIZE, chunk=KiB, compact) as
    the configuration keys of its phase; ValueError names the part and what is allowed."""
    out, settings = {}, {}
    for part in (p.strip() for p in spec.split("+")):
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if name == "compact":
            if value or equals:
                raise ValueError("%r: compact takes no value" % part)
            out[COMPACT] = True
        elif name == "heap":
            if not HEAP_SIZE.match(value):
                raise ValueError("heap=%r: give a size in M or G, e.g. heap=512M" % value)
            out[HEAP] = value
        elif name == "chunk":
            if not value.isdigit() or int(value) not in ke._shape.TUNED_NODE.tables:
                raise ValueError(
                    "chunk=%r: the tuned node's tables have chunk lengths %s (KiB)"
                    % (value, ", ".join(str(c) for c in sorted(ke._shape.TUNED_NODE.tables)))
                )
            out[st.CHUNK] = int(value)
        elif SETTING_NAME.match(name) and value:
            settings[name] = yaml.safe_load(value)
        else:
            raise ValueError(
                "%r: give NAME=VALUE (a cassandra.yaml key), heap=SIZE, chunk=KiB or compact, joined by +" % part
            )
    if settings:
        out[NODE_SETTINGS] = settings
    if not out:
        raise ValueError("%r: an empty phase" % spec)
    return out


def restart_state(config):
    """(cassandra.yaml keys, heap) the tuned node runs an arm's configuration with ({} and None: its own)."""
    return dict(config.get(NODE_SETTINGS) or {}), config.get(HEAP)


def tuned_config(model, hardware, spec, records, threads, defaults):
    """(config, predicted ops/s, {chunk: (config, predicted)}): the search's best with each twin table's chunk length
    held fixed, the changes the surrogate does not reward taken back to the defaults."""
    work = st.workload_row(spec, records, threads)
    work.pop("name")
    found = {}
    for chunk in sorted(ke.CHUNK_TABLES):
        start = dict(defaults, **{st.CHUNK: chunk})
        # A pool and a short genetic refinement, then every change the model does not reward is taken back.
        result = tuner.tune_many(
            tuner.Throughput(model, hardware=hardware),
            [([work], None)],
            fixed={st.CHUNK: chunk},
            include=[start],
            seed=0,
            reference=start,
        )[0]
        config = {k: int(round(float(v))) for k, v in result["config"].items()}
        found[chunk] = (config, float(result["predicted"][0]))
    best = max(found, key=lambda c: found[c][1])
    return found[best][0], found[best][1], found


def rotation(rounds, arms=ARMS):
    """The order of the arms per round: a Latin square repeated, each arm in every position equally often; for an
    even number of arms a Williams square, where every arm also follows every other arm once."""
    n = len(arms)
    if n % 2:
        orders = [arms[r:] + arms[:r] for r in range(n)]
    else:
        # The first row 0, 1, n-1, 2, n-2, ...; every other row adds r to it (mod n).
        first, low, high = [0], 1, n - 1
        while len(first) < n:
            first.append(low)
            low += 1
            if len(first) < n:
                first.append(high)
                high -= 1
        orders = [tuple(arms[(i + r) % n] for i in first) for r in range(n)]
    return [tuple(orders[r % n]) for r in range(rounds)]


# The throughput a ratio is taken of: as measured, or per unit of the node's CPU speed (trials/speed_probe.py).
ESTIMATES = {"ops_s": "raw", "ops_per_speed": "per CPU speed"}


def summarize(windows, arms=ARMS, key="ops_s"):
    """{arm: {"ratio", "low", "high", "n", "won", "ops_s", "server_cpu", "client_side_cpu", "read_mb_s"}}: each arm
    against the defaults of the same round, the ratio of key (ops_s or ops_per_speed)."""
    by_round = {}
    for w in windows:
        if w.get(key):
            by_round.setdefault(w["round"], {})[w["arm"]] = w
    out = {}
    for arm in arms:
        ratios = [r[arm][key] / r["defaults"][key] for r in by_round.values() if arm in r and "defaults" in r]
        mine = [w for w in windows if w["arm"] == arm and w.get("ops_s")]

        def mean(key, mine=mine):
            values = [w[key] for w in mine if w.get(key) is not None]
            return statistics.mean(values) if values else None

        # The geometric mean and its t interval on the logarithms, as every design of trials/designs.py reads them.
        found = designs.summarize(ratios)
        low, high = found["t_interval"] or (float("nan"), float("nan"))
        out[arm] = {
            "ratio": found["ratio"] if found["ratio"] is not None else float("nan"),
            "low": low,
            "high": high,
            "n": found["n"],
            "won": found["b_won"],
            "ops_s": mean("ops_s"),
            "server_cpu": mean("server_cpu"),
            "client_side_cpu": mean("client_side_cpu"),
            "read_mb_s": mean("read_mb_s"),
            "idle_node_cpu": mean("idle_node_cpu"),
        }
    return out


def _half_floor(summary):
    """The A/A floor as a half-width on the logarithms (nan with fewer than 2 rounds)."""
    floor = summary["defaults again"]
    if floor["n"] < 2 or math.isnan(floor["low"]):
        return float("nan")
    return max(abs(math.log(floor["low"])), abs(math.log(floor["high"])))


def chosen_estimate(windows, arms=ARMS):
    """(key, {key: summary}): the throughput (raw or per CPU speed) whose A/A floor ("defaults again") is the
    narrowest, chosen on the A/A arm alone before any other arm is looked at, as knob_effects.py does."""
    summaries = {key: summarize(windows, arms, key) for key in ESTIMATES}
    floors = {key: _half_floor(found) for key, found in summaries.items()}
    usable = [key for key in ESTIMATES if not math.isnan(floors[key])]
    return (min(usable, key=floors.get) if usable else "ops_s"), summaries


def markdown(results):
    lines = [
        "| workload | arm | configuration | predicted ops/s | measured ops/s | vs defaults, same round [95 %]"
        " | rounds won | verdict against the A/A floor | the other estimate [95 %] | node CPU | client side CPU"
        " | disk read MB/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for item in results:
        arms = tuple(item.get("arms", ARMS))
        key, summaries = chosen_estimate(item["windows"], arms)
        summary = summaries[key]
        other_key = next(k for k in ESTIMATES if k != key)
        other = summaries[other_key]
        half = _half_floor(summary)
        for arm in arms:
            s = summary[arm]
            if arm == "defaults":
                verdict, text, aside = "-", "1 (the reference)", "-"
            else:
                text = "%.3f [%.3f, %.3f] (%s)" % (s["ratio"], s["low"], s["high"], ESTIMATES[key])
                o = other[arm]
                aside = "%s %.3f [%.3f, %.3f]" % (ESTIMATES[other_key], o["ratio"], o["low"], o["high"])
                if arm == "defaults again":
                    aside += ", floor +-%.1f %%" % (100 * (math.exp(_half_floor(other)) - 1))
                if arm == "defaults again":
                    verdict = "the floor: +-%.1f %%" % (100 * (math.exp(half) - 1))
                elif s["low"] > math.exp(half):
                    verdict = "**better**, outside the floor"
                elif s["high"] < math.exp(-half):
                    verdict = "worse, outside the floor"
                else:
                    verdict = "inside the floor"
            lines.append(
                "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                % (
                    item["workload"].upper(),
                    arm,
                    json.dumps(item["configs"][arm], sort_keys=True),
                    "%.0f" % item["predicted"][arm] if item["predicted"].get(arm) else "-",
                    "%.0f" % s["ops_s"] if s["ops_s"] else "-",
                    text,
                    "-" if arm == "defaults" else "%d of %d" % (s["won"], s["n"]),
                    verdict,
                    aside,
                    ke._fmt(s["server_cpu"])
                    + (" (idle node %s)" % ke._fmt(s["idle_node_cpu"]) if s.get("idle_node_cpu") is not None else ""),
                    ke._fmt(s["client_side_cpu"]),
                    ke._fmt(s["read_mb_s"], "%.0f"),
                )
            )
    return "\n".join(lines) + "\n"


def pair_phases(configs):
    """[(phase, A's configuration, B's configuration)] of --design pairs: the node A/A, then every other arm of
    configs against the defaults."""
    base = configs["defaults"]
    phases = [(NODE_AA, base, dict(base, node=TUNED))]
    return phases + [
        (arm, base, config) for arm, config in configs.items() if arm not in ("defaults", "defaults again")
    ]


def prepare_tuned_node(phase, config, samplers, tuned_state, switches, log):
    """Before a phase on the tuned node: restart it when the phase runs it with other cassandra.yaml keys or another
    heap than it runs now (tuned_state, updated), then compact its table when the phase asks; each step's price
    goes to switches."""
    node = ke._shape.TUNED_NODE
    table = node.tables[config[st.CHUNK]]
    wanted = restart_state(config)
    if wanted != (tuned_state.get("settings", {}), tuned_state.get("heap")):
        log("  %s: restarting %s with %s, heap %s" % (phase, node.name, wanted[0] or "its own settings", wanted[1]))
        before = ke._shape.server_pid(node)
        price = ke._shape.restart_with(node, wanted[0], wanted[1], log=log)
        tuned_state.update(settings=wanted[0], heap=wanted[1])
        if price.get("pid") == before:
            # The phase would measure the node as it was: stop rather than mislabel it.
            raise SystemExit("%s: %s was not restarted (PID %s still runs)" % (phase, node.name, before))
        samplers[node.name] = ke.Sampler(price["pid"], node.group)
        switches.append(dict(price, kind="restart", phase=phase, node=node.name, table=table))
    if config.get(COMPACT):
        log("  %s: a major compaction of %s on %s" % (phase, table, node.name))
        switches.append(
            dict(ke._shape.major_compaction(table, node), kind="compaction", phase=phase, node=node.name, table=table)
        )
        log("  " + switch_note(switches[-1])[2:])


def measure_pairs(spec, configs, args, samplers, probe, log, switches=None, tuned_state=None):
    """--design pairs: per phase, --rounds pairs of windows in ABBA order, each window a client run on its arm's
    node and table with that node's live knobs set first. With --warmup-s, A's table is warmed once, and B's right
    before its phase: the tuned node reads the defaults' table in the node A/A and its tuned table after it, and
    the page cache of its memory group holds only one of them. tuned_state: what the tuned node was restarted with
    ({"settings", "heap"}, updated), for the caller to put back."""
    windows = []
    switches = [] if switches is None else switches
    tuned_state = {} if tuned_state is None else tuned_state
    for number, (phase, a_config, b_config) in enumerate(pair_phases(configs)):
        if node_of(b_config) is ke._shape.TUNED_NODE:
            prepare_tuned_node(phase, b_config, samplers, tuned_state, switches, log)
        if UCS in b_config:
            node = node_of(b_config)
            table = node.tables[b_config[st.CHUNK]]
            log("  %s: switching %s on %s to %s" % (phase, table, node.name, ucs_options(b_config[UCS])))
            price = ke._shape.switch_compaction(table, ucs_options(b_config[UCS]), node=node, log=log)
            switches.append(dict(price, kind="compaction strategy", phase=phase, node=node.name, table=table))
            log("  " + switch_note(switches[-1])[2:])
        if getattr(args, "compact_each_phase", False):
            for node, table in phase_tables(a_config, b_config):
                if one_sstable(table, node):
                    log("  %s: %s on %s is one SSTable already, not compacted" % (phase, table, node.name))
                    continue
                log("  %s: a major compaction of %s on %s first" % (phase, table, node.name))
                price = ke._shape.major_compaction(table, node)
                switches.append(dict(price, kind="compaction", phase=phase, node=node.name, table=table))
                log("  " + switch_note(switches[-1])[2:])
        together = args.design == CONCURRENT
        if args.warmup_s and together:
            warm_together(spec, a_config, b_config, phase, args, samplers, probe, log)
        elif args.warmup_s:
            warm_up(spec, ({"A": a_config} if number == 0 else {}) | {phase: b_config}, args, samplers, probe, log)
        labels = designs.window_order(args.rounds, "abba")
        step = 2 if together else 1
        for index in range(0, len(labels), step):
            runs = []
            for label in labels[index : index + step]:
                config = a_config if label == "A" else b_config
                node = node_of(config)
                # The latest node's own arm has no live knobs (its settings are its cassandra.yaml); a race on top
                # of it (shape_racing.py --on-latest) has.
                if live_part(config):
                    st.apply_config(live_part(config), node)
                runs.append((label, config[st.CHUNK], node))
            began = time.time()
            if together:
                records = ke.client_windows_together(
                    [(spec, node.tables[chunk], samplers[node.name], label, node) for label, chunk, node in runs],
                    args,
                    args.window_s,
                    args.settle_s,
                    probe,
                )
            else:
                label, chunk, node = runs[0]
                records = [
                    ke.client_window(
                        spec,
                        node.tables[chunk],
                        args,
                        args.window_s,
                        args.settle_s,
                        samplers[node.name],
                        probe,
                        label,
                        node,
                    )
                ]
            for offset, ((label, chunk, node), record) in enumerate(zip(runs, records, strict=True)):
                state = ke._shape.table_state(node.tables[chunk], node) if args.table_state else {}
                windows.append(dict(record, phase=phase, index=index + offset, node=node.name, state=state))
                log(
                    "  %s window %d/%d %s (%s, %s KiB) %s ops/s (%.0f s)%s"
                    % (
                        phase,
                        index + offset + 1,
                        len(labels),
                        label,
                        node.name,
                        chunk,
                        ke._fmt(record["ops_s"], "%.0f"),
                        time.time() - began,
                        "; SSTables %s, per read %s (max %s)"
                        % (state.get("sstables"), state.get("sstables_per_read"), state.get("sstables_per_read_max"))
                        if state
                        else "",
                    )
                )
    st.apply_config(live_part(configs["defaults"]), ke._shape.BENCH_NODE)
    return windows


def pair_ratios_of(windows, phase, estimator):
    """The B / A ratios of a phase's windows under one of PAIR_ESTIMATORS ([] when its windows do not make them)."""
    key, pairing = PAIR_ESTIMATORS[estimator]
    mine = [w for w in windows if w.get("phase") == phase]
    try:
        return pairing([w["arm"] for w in mine], [w.get(key) for w in mine])
    except designs.DesignError:
        return []


def summarize_pairs(windows):
    """{"estimator", "floor", "phases": {phase: {...}}}: the estimator whose node A/A is the narrowest, that floor,
    and per phase its ratio with the interval to read, the verdict against the floor, the ratio with the node A/A's
    taken out, and the arms' means (ops/s, CPU, disk)."""
    phases = list(dict.fromkeys(w["phase"] for w in windows))
    aa = {name: designs.summarize(pair_ratios_of(windows, NODE_AA, name)) for name in PAIR_ESTIMATORS}
    # The estimator is the one whose node A/A is least noisy around its own ratio: the ratio itself (what one node
    # does better than the other on the same configuration) is taken out of every comparison.
    estimator, spread = designs.narrowest_floor(aa, designs.noise_spread)
    estimator = estimator or "pairs, raw"
    floor = designs.noise_floor(aa[estimator])
    reference = pair_ratios_of(windows, NODE_AA, estimator)
    latest = pair_ratios_of(windows, LATEST, estimator) if LATEST in phases else None
    out = {"estimator": estimator, "floor": floor, "spread": spread, "aa_ratio": aa[estimator]["ratio"], "phases": {}}
    for phase in phases:
        ratios = pair_ratios_of(windows, phase, estimator)
        summary = designs.summarize(ratios)
        corrected = None if phase == NODE_AA else designs.ratio_of_ratios(ratios, reference)
        # Every phase's A ran the defaults, so the ratio of two phases' pair ratios compares their B arms.
        against_latest = (
            None if latest is None or phase in (NODE_AA, LATEST) else designs.ratio_of_ratios(ratios, latest)
        )
        mine = [w for w in windows if w.get("phase") == phase]

        def mean(key, arm, mine=mine):
            # A window's own measure, or its table's state after it (--table-state).
            values = [w[key] if key in w else (w.get("state") or {}).get(key) for w in mine if w["arm"] == arm]
            values = [value for value in values if value is not None]
            return statistics.mean(values) if values else None

        out["phases"][phase] = {
            "summary": summary,
            "interval": designs.interval_of(summary),
            "verdict": "(the floor)" if phase == NODE_AA else designs.verdict(summary, floor),
            "corrected": corrected,
            "verdict_corrected": None if corrected is None else designs.verdict(corrected, spread),
            "against_latest": against_latest,
            "windows": len(mine),
            "node": {arm: next((w["node"] for w in mine if w["arm"] == arm), None) for arm in ("A", "B")},
            "means": {
                arm: {
                    k: mean(k, arm)
                    for k in (
                        "ops_s",
                        "server_cpu",
                        "client_side_cpu",
                        "read_mb_s",
                        "disk_reads_s",
                        "disk_read_ms",
                        "sstables",
                        "sstables_per_read",
                    )
                }
                for arm in ("A", "B")
            },
        }
    return out


def floor_text(floor, spread, ratio):
    """The node A/A's floor around 1 and, when the nodes differ, its noise around its own ratio (the floor of the
    comparisons with that ratio taken out)."""
    if floor is None:
        return "-"
    text = "+-%.1f %%" % (100 * floor)
    if spread is not None and ratio and abs(floor - spread) > 0.0005:
        text += " (+-%.1f %% around %.3f)" % (100 * spread, ratio)
    return text


def markdown_pairs(results):
    lines = [
        "| workload | phase | A (node) | B (node) | windows | B / A [95 %] | B won | floor (node A/A) | verdict"
        " | node A/A taken out [95 %] | its verdict | ops/s A / B | node CPU A / B | client side CPU"
        " | disk read MB/s A / B | disk reads/s A / B | ms per disk read A / B |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for item in results:
        found = summarize_pairs(item["windows"])
        floor = found["floor"]
        for phase, row in found["phases"].items():
            s, interval, corrected = row["summary"], row["interval"], row["corrected"]
            a_config, b_config = next((a, b) for p, a, b in pair_phases(item["configs"]) if p == phase)
            means = row["means"]
            lines.append(
                "| %s | %s | %s (%s) | %s (%s) | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                % (
                    item["workload"].upper(),
                    phase,
                    json.dumps(a_config, sort_keys=True),
                    row["node"]["A"],
                    json.dumps({k: v for k, v in b_config.items() if k != "node"}, sort_keys=True),
                    row["node"]["B"],
                    row["windows"],
                    "%.3f [%.3f, %.3f] (%s)" % (s["ratio"], interval[0], interval[1], found["estimator"])
                    if interval
                    else "-",
                    "%d of %d" % (s["b_won"], s["n"]),
                    floor_text(floor, found["spread"], found["aa_ratio"]),
                    row["verdict"],
                    _ratio_text(corrected["ratio"], corrected["t_interval"]) if corrected else "-",
                    row["verdict_corrected"] or "-",
                    "%s / %s" % (ke._fmt(means["A"]["ops_s"], "%.0f"), ke._fmt(means["B"]["ops_s"], "%.0f")),
                    "%s / %s" % (ke._fmt(means["A"]["server_cpu"]), ke._fmt(means["B"]["server_cpu"])),
                    ke._fmt(means["A"]["client_side_cpu"]),
                    "%s / %s" % (ke._fmt(means["A"]["read_mb_s"], "%.0f"), ke._fmt(means["B"]["read_mb_s"], "%.0f")),
                    "%s / %s"
                    % (ke._fmt(means["A"]["disk_reads_s"], "%.0f"), ke._fmt(means["B"]["disk_reads_s"], "%.0f")),
                    "%s / %s"
                    % (ke._fmt(means["A"]["disk_read_ms"], "%.1f"), ke._fmt(means["B"]["disk_read_ms"], "%.1f")),
                )
            )
        states = any(row["means"]["A"]["sstables_per_read"] is not None for row in found["phases"].values())
        if states:
            notes.append(
                "%s, SSTables in the table and touched per read (the mean of the windows' medians), A / B:"
                % item["workload"].upper()
            )
            for phase, row in found["phases"].items():
                means = row["means"]
                notes.append(
                    "- %s: %s / %s SSTables, %s / %s per read"
                    % (
                        phase,
                        ke._fmt(means["A"]["sstables"], "%.1f"),
                        ke._fmt(means["B"]["sstables"], "%.1f"),
                        ke._fmt(means["A"]["sstables_per_read"], "%.1f"),
                        ke._fmt(means["B"]["sstables_per_read"], "%.1f"),
                    )
                )
        against = [(phase, row["against_latest"]) for phase, row in found["phases"].items() if row["against_latest"]]
        if against:
            notes.append(
                "%s against %s (B / A of the phase over B / A of latest's phase, Welch interval):"
                % (item["workload"].upper(), LATEST)
            )
            notes += [
                "- %s: %s" % (phase, _ratio_text(ratio["ratio"], ratio["t_interval"])) for phase, ratio in against
            ]
        for switch in item.get("switches") or []:
            notes.append(switch_note(switch))
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _ratio_text(ratio, interval):
    if ratio is None:
        return "-"
    return "%.3f [%.3f, %.3f]" % (ratio, *interval) if interval else "%.3f (no interval)" % ratio


def switch_note(switch):
    """One line under the pairs table: a step before a phase and its price."""
    kind = switch.get("kind", "compaction strategy")
    if kind == "restart":
        return "- the restart before %s (%s, with %s, heap %s): %.0f s" % (
            switch["phase"],
            switch["node"],
            switch["settings"] or "its own settings",
            switch["heap"],
            switch["seconds"],
        )
    return "- the %s before %s (%s, %s): %.0f s, %s s of node CPU, %s MB written, SSTables %s -> %s%s" % (
        "switch" if kind == "compaction strategy" else kind,
        switch["phase"],
        switch["node"],
        switch["table"],
        switch["seconds"],
        ke._fmt(switch.get("node_cpu_s"), "%.0f"),
        ke._fmt(switch.get("write_mb"), "%.0f"),
        switch["before"].get("sstables"),
        switch["after"].get("sstables"),
        "" if switch.get("finished", True) else " (its compactions had not finished)",
    )


def render(results):
    """The Markdown tables of a run's results, each in its design's table."""
    pairs = [item for item in results if item.get("design") in PAIRED]
    rounds = [item for item in results if item.get("design") not in PAIRED]
    return "\n".join(([markdown(rounds)] if rounds else []) + ([markdown_pairs(pairs)] if pairs else []))


def measure(spec, configs, args, samplers, probe, log):
    """The rounds: one client run per arm on the arm's node and table, that node's live knobs set to the arm's
    configuration first (the latest node's settings are its cassandra.yaml). Each run also records the CPU of the
    nodes that idle meanwhile."""
    windows = []
    arms = tuple(configs)
    for index, order in enumerate(rotation(args.rounds, arms)):
        for arm in order:
            config = dict(configs[arm])
            chunk = config.pop(st.CHUNK)
            node = node_of(config)
            config.pop("node", None)
            if node is not ke._shape.LATEST_NODE:
                st.apply_config(config, node)
            others = [sampler for name, sampler in samplers.items() if name != node.name]
            idle = [sampler.sample() for sampler in others]
            began = time.time()
            record = ke.client_window(
                spec, node.tables[chunk], args, args.window_s, args.settle_s, samplers[node.name], probe, arm, node
            )
            if others:
                after = [sampler.sample() for sampler in others]
                record["idle_node_cpu"] = round(
                    sum(b["server_cpu"] - a["server_cpu"] for a, b in zip(idle, after, strict=True))
                    / max(1.0, time.time() - began),
                    3,
                )
            windows.append(dict(record, round=index))
            log(
                "  round %d/%d %s (%s, %s KiB) %s ops/s (%.0f s)"
                % (index + 1, args.rounds, arm, node.name, chunk, ke._fmt(record["ops_s"], "%.0f"), time.time() - began)
            )
    st.apply_config({k: v for k, v in configs["defaults"].items() if k != st.CHUNK}, ke._shape.BENCH_NODE)
    return windows


def warm_together(spec, a_config, b_config, phase, args, samplers, probe, log):
    """--design concurrent: one client run of --warmup-s on A's and B's tables at the same time, with their live
    knobs, before every phase."""
    runs = []
    for config in (a_config, b_config):
        node = node_of(config)
        if live_part(config):
            st.apply_config(live_part(config), node)
        runs.append((spec, node.tables[config[st.CHUNK]], samplers[node.name], "warm-up", node))
    settle = min(30.0, args.warmup_s / 2.0)
    records = ke.client_windows_together(runs, args, args.warmup_s - settle, settle, probe)
    log(
        "  %s: warm-up together, %s"
        % (
            phase,
            ", ".join(
                "%s on %s: %s ops/s" % (run[1], run[4].name, ke._fmt(record["ops_s"], "%.0f"))
                for run, record in zip(runs, records, strict=True)
            ),
        )
    )


def warm_up(spec, configs, args, samplers, probe, log):
    """One client run of --warmup-s on every table an arm reads (with the arm's live knobs), so that no arm starts
    colder than another."""
    seen = []
    for config in configs.values():
        node = node_of(config)
        if live_part(config):
            st.apply_config(live_part(config), node)
        key = (node.name, node.tables[config[st.CHUNK]])
        if key in seen:
            continue
        seen.append(key)
        # Its throughput over the last part (a window must start after the client's first status lines).
        settle = min(30.0, args.warmup_s / 2.0)
        record = ke.client_window(
            spec, key[1], args, args.warmup_s - settle, settle, samplers[node.name], probe, "warm-up", node
        )
        log("  warm-up of %s on %s: %s ops/s" % (key[1], node.name, ke._fmt(record["ops_s"], "%.0f")))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--workloads", default="b", help="of %s, separated by commas" % ", ".join(ke.WORKLOADS))
    parser.add_argument(
        "--model", default=SHIPPED, help="the shape surrogate (default %s)" % os.path.relpath(SHIPPED, ROOT)
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--settle-s", type=float, default=20.0, help="left out at every client run's start")
    parser.add_argument(
        "--latest",
        action="store_true",
        help="an arm more: Cassandra 5.0.9's cassandra_latest.yaml on its own node (inventories/bench-latest)",
    )
    parser.add_argument(
        "--tuned-node",
        action="store_true",
        help="the tuned configuration on a node of its own (inventories/bench-tuned), not on the bench node's twin "
        "table, whose page cache the defaults' table shares",
    )
    parser.add_argument(
        "--design",
        default="rounds",
        help="rounds (every arm once per round, in a Latin or Williams square), pairs (two nodes side by side in "
        "adjacent ABBA windows, a node A/A first; implies --tuned-node) or concurrent (the pairs' phases, each "
        "pair's two windows at the same time, one client per node: both nodes see the same disk and CPU share)",
    )
    parser.add_argument(
        "--warmup-s", type=float, default=0.0, help="a client run on every table an arm reads before the rounds"
    )
    parser.add_argument(
        "--ucs",
        default="",
        help="pairs only: a phase per value (e.g. L4,T4) in which the tuned node's table runs the unified compaction "
        "strategy with these scaling_parameters, switched by ALTER TABLE before the phase (its compactions waited "
        "for and priced) and switched back at the end of the run",
    )
    parser.add_argument(
        "--node-phase",
        action="append",
        default=[],
        help="pairs only, repeatable: a phase in which the tuned node runs the defaults with these changes, joined by "
        "+: NAME=VALUE (a cassandra.yaml key; the node restarts), heap=SIZE (restart), chunk=4 (its 4 KiB twin "
        "table), compact (a major compaction of that table, priced); e.g. heap=512M+chunk=4+compact. The node is "
        "restarted with its own settings at the end of the run",
    )
    parser.add_argument(
        "--no-tuned", action="store_true", help="no surrogate + GA arm (to measure only the node A/A and the others)"
    )
    parser.add_argument(
        "--table-state",
        action="store_true",
        help="after every window, the SSTables of its table and the SSTables a read touched (nodetool)",
    )
    parser.add_argument(
        "--raced",
        default=None,
        help="pairs or concurrent: a phase more, the best configuration of a race on this node shape "
        "(benchmarks/shape_racing.py's history) on the tuned node, measured as the surrogate + GA's is; a folder: "
        "the newest finished race of each workload in it (none: no such phase)",
    )
    parser.add_argument(
        "--compact-first",
        action="store_true",
        help="pairs or concurrent: before the first phase, a major compaction (nodetool compact, priced) of every "
        "table an arm reads, on each node (the latest node's among them), so that the nodes start with their "
        "tables in one state (one SSTable each; the latest node's unified compaction, one per shard) rather than "
        "in whatever state their loads and earlier runs left",
    )
    parser.add_argument(
        "--compact-each-phase",
        action="store_true",
        help="pairs or concurrent: before every phase, a major compaction (priced) of the tables its two arms read "
        "(the latest node's too: its unified compaction leaves its shards, 4 SSTables here), so that an update "
        "workload's SSTables, which pile up over the phases and the runs, do not make the later phases' ratios "
        "depend on their order",
    )
    ke._shape.add_disk_cap_options(parser, "every node's")
    ke._shape.add_allocator_option(parser, "every node")
    parser.add_argument(
        "--keep-nodes",
        action="store_true",
        help="pairs or concurrent: leave a node that runs already as it is; by default it is restarted first, so "
        "that both nodes start the node A/A as new JVMs, as the nodes the run starts (what earlier runs left in a "
        "node's process, such as a row cache's memory, takes page cache from its memory group)",
    )
    parser.add_argument("--reload", action="store_true", help="reload the data sets even when they are in place")
    parser.add_argument("--records", type=int, default=4000000)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--render", default=None, help="print the table of a saved run (its JSON file) and stop")
    args = parser.parse_args(argv)
    ke._shape.check_disk_cap_options(parser, args)
    ke._shape.check_allocator_option(parser, args)
    args.workloads = args.workloads.split(",")
    for name in args.workloads:
        if name not in ke.WORKLOADS:
            parser.error("--workloads: %r is not allowed; choose from %s" % (name, ", ".join(ke.WORKLOADS)))
    args.ucs = [value.strip() for value in args.ucs.split(",") if value.strip()]
    for value in args.ucs:
        if not UCS_PARAMETERS.match(value):
            parser.error("--ucs: %r is not a scaling parameter; use N, L<n>, T<n> or an integer, e.g. L4,T4" % value)
    phases = {}
    for spec in args.node_phase:
        try:
            phases[spec] = parse_node_phase(spec)
        except ValueError as exc:
            parser.error("--node-phase: %s" % exc)
    args.node_phase = phases
    if args.design not in DESIGNS:
        parser.error("--design: %r is not allowed; choose one of %s" % (args.design, ", ".join(DESIGNS)))
    if args.rounds < 2:
        parser.error("--rounds: %r is too few for an interval; choose 2 or more" % args.rounds)
    if args.design in PAIRED:
        # The node A/A runs the defaults on the tuned node.
        args.tuned_node = True
        if args.rounds % 2:
            parser.error(
                "--rounds: %r with --design %s; choose an even number (whole ABBA blocks)" % (args.rounds, args.design)
            )
    elif args.ucs or args.no_tuned or args.node_phase or args.raced or args.compact_first or args.compact_each_phase:
        parser.error(
            "--ucs, --node-phase, --raced, --compact-first, --compact-each-phase and --no-tuned: only with --design "
            "pairs or concurrent "
            "(the rounds compare every arm on one node)"
        )
    elif args.latest and args.rounds % 4:
        parser.error(
            "--rounds: %r with --latest; choose a multiple of 4 (a Williams square of four arms)" % args.rounds
        )
    return args


def arm_configs(args, defaults, tuned, raced=None):
    """{arm: configuration} of a run, in the order of its phases: the defaults (on the 16 KiB table), the tuned
    configuration (unless --no-tuned), a phase per --ucs and --node-phase value on the tuned node, the latest
    node's (--latest), and the defaults again. A raced configuration with the row cache on makes the row cache
    part of every arm: off in the others (the tuned node serves the node A/A and the other phases after it)."""
    base = dict(defaults, **{st.CHUNK: 16})
    if raced is not None and raced.get(st.ROW_CACHE):
        base[st.ROW_CACHE] = 0
    configs = {"defaults": base}
    if not args.no_tuned:
        configs["tuned"] = dict(tuned, node=TUNED) if args.tuned_node else tuned
    on_latest = raced is not None and raced.get("node") == LATEST
    if raced is not None and not on_latest:
        # The format is a node here (the bti twin node); a best that reads BIG files runs on the tuned node.
        configs[RACED] = dict(raced, node=BTI if raced.get(shape_racing.FORMAT) == "bti" else TUNED)
    for scaling in args.ucs:
        configs[ucs_arm(scaling)] = dict(base, node=TUNED, **{UCS: scaling})
    for name, changes in args.node_phase.items():
        configs[node_phase_arm(name)] = dict(base, node=TUNED, **changes)
    if args.latest:
        configs[LATEST] = {"node": LATEST, st.CHUNK: 16}
    if on_latest:
        # After the latest node's own phase, which its live knobs and row cache must not reach.
        configs[RACED] = dict(raced, **{st.CHUNK: 16})
    configs["defaults again"] = base
    return configs


@contextlib.contextmanager
def tuned_node_restored(log, stopping=()):
    """What a run changes on the tuned node, put back when the block ends, whatever ends it: yields {"compaction":
    {table: its compaction options before a --ucs phase}, "restart": {"settings", "heap"} of a --node-phase}, for
    the run to fill. The compaction options are switched back; a node restarted with other settings is restarted
    with its own, unless it is in stopping (a node the run started, and stops: its next start takes its own)."""
    changes = {"compaction": {}, "restart": {}}
    try:
        yield changes
    finally:
        tuned = ke._shape.TUNED_NODE
        for table, options in changes["compaction"].items():
            log("switching %s on %s back to %s" % (table, tuned.name, options))
            ke._shape.cql_execute(
                "ALTER TABLE %s.%s WITH compaction = %s" % (ke._shape.KEYSPACE, table, options), node=tuned
            )
        if changes.get("row_cache"):
            # The tables' caching is in the node's schema, which outlives a stop: a later run must not find it on.
            node = tuned if changes["row_cache"] is True else changes["row_cache"]
            log("switching the row cache of %s off" % node.name)
            st.apply_config({st.ROW_CACHE: 0}, node)
        restarted = changes["restart"]
        if (restarted.get("settings") or restarted.get("heap")) and tuned not in stopping:
            log("restarting %s with its own settings" % tuned.name)
            ke._shape.restart_with(tuned, log=log)


def phase_tables(a_config, b_config):
    """[(node, table)] one phase's two arms read, each once."""
    return tables_read({"A": a_config, "B": b_config}, phases=[("phase", a_config, b_config)])


def tables_read(configs, phases=None):
    """[(node, table)] the phases of configs (pair_phases: the node A/A's defaults on the tuned node among them)
    read, each once, in the order of the phases. The latest node's table is among them: left to its unified
    compaction, the updates of earlier runs had left it in 15 SSTables (6.3 GB live for 4.3 GB of rows, no
    compaction pending), and a scan of workload E read every one of them (docs/benchmarks.md)."""
    found = []
    for _phase, a_config, b_config in pair_phases(configs) if phases is None else phases:
        for config in (a_config, b_config):
            node = node_of(config)
            pair = (node, node.tables[config[st.CHUNK]])
            if pair not in found:
                found.append(pair)
    return found


def one_sstable(table, node):
    """Whether the node's table is one SSTable already: a major compaction would only rewrite it (4.3 GB, about a
    minute here) and drop its pages from the cache, leaving the same state."""
    held = ke._shape.table_state(table, node)["sstables"]
    return held is not None and held <= 1


def compact_first(configs, log):
    """--compact-first: a major compaction of every table the arms read, priced (the switches' records)."""
    switches = []
    for node, table in tables_read(configs):
        if one_sstable(table, node):
            log("before the phases: %s on %s is one SSTable already, not compacted" % (table, node.name))
            continue
        log("before the phases: a major compaction of %s on %s" % (table, node.name))
        price = ke._shape.major_compaction(table, node)
        switches.append(dict(price, kind="compaction", phase="the phases", node=node.name, table=table))
        log("  " + switch_note(switches[-1])[2:])
    return switches


def run_workloads(args, nodes, model, hardware, server_cpus, out, stamp, log, changes=None, races=None):
    """The run, per workload; changes (of tuned_node_restored) gets what the run changes on the tuned node: its
    tables' compaction options before a --ucs phase changes them, and what a --node-phase restarted it with.
    races: raced_races(args), when the caller has read them already."""
    changes = {"compaction": {}, "restart": {}} if changes is None else changes
    races = raced_races(args) if races is None else races
    for node in nodes:
        ke._shape.ensure_loaded(args.records, force=args.reload, log=log, node=node)
    for node in nodes:
        outside = ke._shape.cached_outside(node)
        if outside is not None:
            log("%s: its tables' data cached outside its memory group: %.0f MB" % (node.name, outside / 1e6))
    if args.ucs:
        tuned = ke._shape.TUNED_NODE
        changes["compaction"].update({t: ke._shape.table_compaction(t, tuned) for t in tuned.tables.values()})
    shape = ke._shape.describe()
    log(shape)
    defaults = dict(st.DEFAULTS, key_cache_size=ke.defaults_key_cache(log=log))
    samplers = {node.name: ke.Sampler(ke._shape.server_pid(node), node.group) for node in nodes}
    results = []
    began = time.monotonic()
    with speed_probe.SpeedProbe(
        server_cpus or set(range(os.cpu_count() or 1)), os.path.join(out, "cpu-speed-%s.txt" % stamp)
    ) as probe:
        for spec in args.workloads:
            config, predicted, per_chunk = tuned_config(model, hardware, spec, args.records, args.threads, defaults)
            history, raced, race = races.get(spec, NO_RACE)
            if args.raced and os.path.isdir(args.raced):
                log("%s: the newest finished race in %s: %s" % (spec, args.raced, history or "none, no raced phase"))
            if history:
                if race["node"] == ke._shape.LATEST_NODE.name:
                    if not args.latest:
                        raise SystemExit(
                            "--raced: %s raced on top of cassandra_latest (shape_racing.py --on-latest); add --latest, "
                            "so that its phase has the latest node's own beside it" % history
                        )
                    raced = dict(raced, node=LATEST)
                log(
                    "%s: raced %s (mean %s ops/s over its %d windows of the race, %d windows in all)"
                    % (spec, raced, race["best"]["mean"], race["best"]["instances"], race["evaluations"])
                )
            configs = arm_configs(args, defaults, config, raced)
            if raced and raced.get(st.ROW_CACHE):
                changes["row_cache"] = node_of(raced)
            base = configs["defaults"]
            work = st.workload_row(spec, args.records, args.threads)
            work.pop("name")
            base_predicted = float(tuner.Throughput(model, hardware=hardware).node_matrix([work], [base])[0][0])
            log("%s: tuned %s (predicted %.0f ops/s; per chunk %s)" % (spec, config, predicted, per_chunk))
            pairs = args.design in PAIRED
            if args.warmup_s and not pairs:  # pairs warm each phase's tables before it
                warm_up(spec, configs, args, samplers, probe, log)
            switches = compact_first(configs, log) if args.compact_first and not results else []
            if pairs:
                windows = measure_pairs(spec, configs, args, samplers, probe, log, switches, changes["restart"])
            else:
                windows = measure(spec, configs, args, samplers, probe, log)
            results.append(
                {
                    "workload": spec,
                    "design": args.design,
                    "arms": list(configs),
                    "configs": configs,
                    "predicted": {"tuned": predicted, "defaults": base_predicted},
                    "per_chunk": {str(k): v for k, v in per_chunk.items()},
                    "race": None
                    if race is None
                    else {"history": history, "best": race["best"], "evaluations": race["evaluations"]},
                    "windows": windows,
                    "switches": switches,
                }
            )
            with open(os.path.join(out, "shape-tuning-%s.json" % stamp), "w", encoding="utf-8") as handle:
                json.dump({"shape": shape, "args": vars(args), "results": results}, handle, indent=1, default=str)
    return results, shape, began


NO_RACE = (None, None, None)
"""A workload's entry of raced_races() when it has no raced phase."""


def raced_races(args):
    """{workload: (history, raced best, the race's result)} of --raced (a race's history, or the folder of the
    newest finished race of each workload), each history read once: NO_RACE for a workload with none."""
    races = {}
    one = None  # a history file given: the race of every workload
    for spec in args.workloads if args.raced else ():
        if os.path.isdir(args.raced):
            history, found = shape_racing.newest_race_best(args.raced, spec)
        else:
            one = one or shape_racing.race_best(args.raced)
            history, found = args.raced, one
        races[spec] = (history, *found) if history else NO_RACE
    return races


def raced_on_bti(races):
    """Whether a workload's raced configuration (races: raced_races()) reads BTI files: its phase then needs the
    bti twin node, which the run starts beside the others."""
    return any(race is not None and race["node"] == ke._shape.BTI_NODE.name for _h, _b, race in races.values())


def main(argv=None):
    args = parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as handle:
            print(render(json.load(handle)["results"]))
        return 0
    if not os.path.exists(args.model):
        raise SystemExit("--model: %s does not exist; make it with benchmarks/shape_training.py --model" % args.model)
    data, metadata = modelstore.load_model(args.model, kind="surrogate", store="cassandra")
    model = sg.Surrogate.from_dict(data)
    hardware = metadata["hardware_profile"]
    out, stamp, log, server_cpus = ke._shape.start_run("shape-tuning")
    own = ([ke._shape.TUNED_NODE] if args.tuned_node else []) + ([ke._shape.LATEST_NODE] if args.latest else [])
    races = raced_races(args)
    if raced_on_bti(races):
        own.append(ke._shape.BTI_NODE)
    nodes = [ke._shape.BENCH_NODE] + own
    started = []
    try:
        with ke._shape.disk_caps(nodes, args.disk_read_limit, args.disk_read_iops, log=log, stopping=started):
            with ke._shape.allocator(nodes, args.jemalloc, log=log, stopping=started):
                with tuned_node_restored(log, stopping=started) as changes:
                    if args.design in PAIRED and not args.keep_nodes:
                        for node in nodes:
                            if ke._shape.node_running(node):
                                log("restarting %s first: a new JVM beside the nodes this run starts" % node.name)
                                ke._shape.restart_fresh(node, log=log)
                    for node in own:
                        if not ke._shape.node_running(node):
                            # A node of this run's own: started here (about 90 s) and stopped at the end.
                            log("starting %s (%s)" % (node.name, os.path.relpath(node.inventory, ROOT)))
                            started.append(node)
                            ke._shape.start_node(node)
                    results, shape, began = run_workloads(
                        args, nodes, model, hardware, server_cpus, out, stamp, log, changes, races
                    )
    finally:
        for node in started:
            log("stopping %s" % node.name)
            ke._shape.playbook("lab_down.yml", node)
    text = "Node shape: %s.\n\n%s\nWall time: %.0f min.\n" % (shape, render(results), (time.monotonic() - began) / 60)
    with open(os.path.join(out, "shape-tuning-%s.md" % stamp), "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
