# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Autotune against doing nothing (or static-optimized) on the bench node shape, both arms at the same moment.

    .venv/bin/python benchmarks/shape_dynamic.py --trace quiet --turns 4
    .venv/bin/python benchmarks/shape_dynamic.py --trace quiet --arms static,none --turns 4
    .venv/bin/python benchmarks/shape_dynamic.py --trace ingest --arms autotune,static --turns 6
    .venv/bin/python benchmarks/shape_dynamic.py --render .lab/bench/shape-dynamic/shape-dynamic-<stamp>.json

Two single-node clusters of the same shape (inventories/bench and inventories/bench-tuned: the same defaults, the
same 4M rows in a 16 KiB table of their own, a memory group and page cache each, both on the node CPU, the clients
and the controller on the other) replay the same trace at the same moment, one client each, so that both arms see
the same disk and CPU share at every moment (the concurrent design of shape_tuning.py, whose A/A floor was under
5 %). Arm "autotune" runs playbooks/autotune.yml in mode auto on its node's inventory at the start of every
phase, as the demo does on the lab (a known schedule, the shape surrogate, the guard of docs/plan.md); "none"
keeps the defaults; "static" sets the static-optimized configuration of the whole trace (the plan's own on the
same surrogate and schedule) live after the warm-up.

Every turn starts from the same state: both nodes back on the defaults (their cassandra.yaml as before, the live
knobs set back), their compactions finished, a warm-up with the defaults on both (the A/A of the turn). The arms
swap nodes every turn, so that what one node does better than the other cancels over two turns: per turn the log
of the ratio of the two arms' total operations is the arms' effect plus or minus the node's, both fitted (least
squares on the turns), the effect's 95 % t interval from the residuals. The warm-up's ratio in the same model is the
A/A floor beside it. Per phase the same, and the client side's and each node's CPU beside every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import threading
import time

import knob_effects as ke
import numpy as np
import yaml
from _common import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

_SPEC = importlib.util.spec_from_file_location("tactician_demo", os.path.join(ROOT, "scripts", "tactician_demo.py"))
demo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(demo)

_shape = ke._shape
MODEL = os.path.join(ROOT, "catalog", "models", "cassandra-shape-drift.json")
NODES = (_shape.BENCH_NODE, _shape.TUNED_NODE)
TABLE = "usertable"
QUIET_RATE = 800
"""ops/s offered in a quiet phase: about two fifths of what a node of this shape serves read-heavy beside another."""
INGEST_RATE = 1600
"""ops/s offered in the ingest trace's upload: about two thirds of what a node of this shape uploads closed-loop beside
another (2,078-2,577 ops/s over 240 s on 2026-12-01), so that its flushes keep up; 64 closed-loop writers filled the
memtables faster than half a CPU flushed them, and writes blocked past their 2 s timeout."""
MIXES = {
    "b": {"read": 0.95, "update": 0.05},
    "a": {"read": 0.5, "update": 0.5},
    "upload": {"read": 0.05, "insert": 0.95},
}
TRACES = {
    # name: [(label, workload of knob_effects.WORKLOADS, offered ops/s or 0 for closed loop)], default seconds
    "quiet": (
        [
            ("read-heavy", "b", 0),
            ("upload", "upload", 0),
            ("quiet reads (a night)", "b", QUIET_RATE),
            ("read-heavy again", "b", 0),
        ],
        (180, 300, 240, 180),
    ),
    # The quiet trace with its upload offered at a rate the node sustains, as a rate-limited loader offers it.
    "ingest": (
        [
            ("read-heavy", "b", 0),
            ("upload", "upload", INGEST_RATE),
            ("quiet reads (a night)", "b", QUIET_RATE),
            ("read-heavy again", "b", 0),
        ],
        (180, 300, 240, 180),
    ),
    "mixed": (
        [("read-heavy", "b", 0), ("update-heavy", "a", 0), ("read-heavy again", "b", 0)],
        (240, 240, 240),
    ),
}
ARMS = ("none", "static", "autotune")
# The live knobs of the shape surrogate and how each is set back (the defaults of the bench inventories).
LIVE_DEFAULTS = {"compaction_throughput": 64, "concurrent_reads": 32, "concurrent_writes": 32}
LIVE_SETTERS = {
    "compaction_throughput": lambda node, v: _shape.nodetool("setcompactionthroughput", v, node=node),
    "concurrent_reads": lambda node, v: _shape.nodetool("setconcurrency", "ReadStage", v, node=node),
    "concurrent_writes": lambda node, v: _shape.nodetool("setconcurrency", "MutationStage", v, node=node),
    "key_cache_size": lambda node, v: ke.set_key_cache(v, node=node),
}
STEP_S = demo.STEP_S


def log_line(text):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), text), flush=True)


# ----------------------------------------------------------------------------------------------- one turn
def conf_file(node):
    return os.path.join(node.node_dir, "conf", "cassandra.yaml")


def set_live(node, config, log):
    for name, value in config.items():
        setter = LIVE_SETTERS.get(name)
        if setter is None:
            continue
        setter(node, int(value))
    if config:
        log("  %s: set live %s" % (node.name, json.dumps(config, sort_keys=True)))


def reset_node(node, conf_text, key_cache_mb, log):
    """The node back on the defaults: its cassandra.yaml as it was (a roll rewrites it) and the live knobs set back."""
    with open(conf_file(node), encoding="utf-8") as handle:
        changed = handle.read() != conf_text
    if changed:
        with open(conf_file(node), "w", encoding="utf-8") as handle:
            handle.write(conf_text)
    set_live(node, dict(LIVE_DEFAULTS, key_cache_size=key_cache_mb), lambda _text: None)
    log("  %s: back on the defaults%s" % (node.name, " (its cassandra.yaml restored)" if changed else ""))


def pending_compactions(node):
    """The node's pending compaction tasks (nodetool compactionstats: "pending tasks  N", or "pending tasks: N")."""
    for line in _shape.nodetool("compactionstats", node=node).splitlines():
        text = line.strip().lower()
        if text.startswith("pending tasks"):
            words = text[len("pending tasks") :].replace(":", " ").split()
            return int(words[0]) if words and words[0].isdigit() else 0
    return 0


def compactions_done(nodes, log, timeout_s=600.0):
    """Waits until no node has a compaction pending (at most timeout_s); returns the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        pending = {node.name: pending_compactions(node) for node in nodes}
        if not any(pending.values()):
            break
        time.sleep(10)
    waited = time.monotonic() - began
    if waited > 1:
        log("  compactions of the last turn finished after %.0f s" % waited)
    return waited


def write_schedule(path, phases, warmup_s):
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            {
                "version": 1,
                "seed": 1,
                "phases": [{"duration_s": warmup_s, "mix": MIXES["b"], "rate": 0, "label": "warm-up"}]
                + [
                    {"duration_s": seconds, "mix": MIXES[spec], "rate": rate, "label": label}
                    for label, spec, rate, seconds in phases
                ],
            },
            handle,
            sort_keys=False,
        )
    return path


def autotune_vars(args, folder, schedule_file, t0, remaining_s, rate):
    """The demo's variables of an autotune run, on a cluster of one node: a live change takes no node down, and a
    change that needs a restart makes the cluster unavailable for it, which the plan prices (docs/rolling.md, the
    aggressive variant)."""
    history = os.path.join(folder, "history.sqlite3")
    variables = demo.autotune_vars(args, folder, history, schedule_file, t0, remaining_s, rate, _shape.KEYSPACE)
    return dict(variables, tactician_aggressive=True)


class Autotune(threading.Thread):
    """One autotune run in the background (the clients go on)."""

    def __init__(self, argv):
        super().__init__(daemon=True)
        self.argv, self.rc, self.began, self.ended = argv, None, None, None

    def run(self):
        self.began = time.time()
        self.rc = demo.ansible(*self.argv)
        self.ended = time.time()


def client(spec, seconds, rate, args, node):
    params = ke.client_params(spec, TABLE, seconds, args.threads, args.records, node)
    params["target"] = int(rate or 0)
    return ke.Client(params)


def start_clients(clients):
    for one in clients.values():
        one.start()


def join_clients(clients):
    """Waits for the clients; interrupted (Ctrl-C, kill -TERM), ends their processes, which outlive the threads."""
    try:
        for one in clients.values():
            one.join()
    except BaseException:
        loaddriver.stop_clients()
        raise


def cpu_sample(pids):
    return {"t": time.time(), "machine": loaddriver.machine_busy_seconds(), **{p: process.cpu_seconds(p) for p in pids}}


def phase_record(label, result, start, end, pid, pids):
    span = max(end["t"] - start["t"], 1e-9)
    servers = sum(end[p] - start[p] for p in pids)
    ops = demo.ops_of(result)
    return {
        "phase": label,
        "ops": ops,
        "ops_s": round(ops / span, 1),
        "p99_ms": demo.p99_of(result),
        "failed": int((result or {}).get("failed_total") or 0),
        "not_found": int((result or {}).get("not_found_total") or 0),
        "node_cpu": round((end[pid] - start[pid]) / span, 3),
        "client_side_cpu": round(max(0.0, end["machine"] - start["machine"] - servers) / span, 3),
        "seconds": round(span, 1),
        "halves": halves(result),
    }


def halves(result):
    """[ops in the first half, ops in the second] of a client's run, from its status lines (cumulative operations
    per second of the run); None without two or more of them."""
    points = ((result or {}).get("status_by_process") or [[]])[0]
    moving = [(float(t), float(n)) for t, n in points if n > 0]
    if len(moving) < 2:
        return None
    (t_start, n_start), (t_end, n_end) = moving[0], moving[-1]
    middle = (t_start + t_end) / 2.0
    at_middle = max(n for t, n in moving if t <= middle)
    return [int(at_middle - n_start), int(n_end - at_middle)]


def prewarm(args, log, round_s=120.0, steady=0.05):
    """Read-heavy load on both nodes together, not measured, in rounds of round_s until every node's last two rounds
    agree within steady or args.prewarm_s have passed: a node just started runs cold (its JIT, its page cache) for
    minutes, which one turn's warm-up does not cover. Returns {node: [ops/s per round]}."""
    rates = {node.name: [] for node in NODES}
    spent = 0.0
    while spent < args.prewarm_s:
        clients = {node.name: client("b", round_s, 0, args, node) for node in NODES}
        start_clients(clients)
        join_clients(clients)
        spent += round_s
        for name, one in clients.items():
            rates[name].append(float((one.result or {}).get("throughput") or 0.0))
        log("  pre-warm round %d: %s" % (len(rates[NODES[0].name]), _rates_text(rates)))
        if all(len(r) >= 2 and abs(r[-1] - r[-2]) <= steady * max(r[-2], 1.0) for r in rates.values()):
            break
    return rates


def _rates_text(rates):
    return ", ".join("%s %.0f ops/s" % (name, values[-1]) for name, values in rates.items() if values)


def run_turn(turn, placement, args, phases, out, conf_texts, key_cache, static_config, log):
    """One turn: placement is {arm: node}. Returns the turn's record."""
    folder = os.path.join(out, "turn-%d" % (turn + 1))
    for part in ("logs", "plans", "reports"):
        os.makedirs(os.path.join(folder, part), exist_ok=True)
    log("turn %d: %s" % (turn + 1, ", ".join("%s on %s" % (arm, node.name) for arm, node in placement.items())))
    for node in NODES:
        reset_node(node, conf_texts[node.name], key_cache[node.name], log)
    compactions_done(NODES, log)
    pids = {node.name: _shape.server_pid(node) for node in NODES}
    schedule_file = write_schedule(os.path.join(folder, "schedule.yml"), phases, args.warmup_s)
    t0 = time.time()
    records = {arm: [] for arm in placement}
    # The warm-up: the defaults on both nodes (the turn's A/A).
    log("  warm-up: %d s read-heavy, the defaults on both" % args.warmup_s)
    segments = [("warm-up", "b", 0, args.warmup_s)] + list(phases)
    runs = []
    tuner = None
    total_s = args.warmup_s + sum(p[3] for p in phases)
    for index, (label, spec, rate, seconds) in enumerate(segments):
        if index == 1 and "static" in placement:
            set_live(placement["static"], static_config, log)
        clients = {arm: client(spec, seconds, rate, args, node) for arm, node in placement.items()}
        start = cpu_sample(pids.values())
        start_clients(clients)
        if index >= 1 and "autotune" in placement:
            time.sleep(args.lead_s)
            remaining = total_s - (time.time() - t0)
            if tuner is not None and tuner.is_alive():
                log("  %s: autotune of the phase before still running; not run" % label)
            elif remaining < 2 * STEP_S:
                log("  %s: %.0f s of the trace left, under two steps: autotune not run" % (label, remaining))
            else:
                extra = demo.write_json(
                    os.path.join(folder, "autotune-%d.json" % index),
                    autotune_vars(args, folder, schedule_file, t0, remaining, rate),
                )
                log_path = os.path.join(folder, "logs", "autotune-%d.log" % index)
                tuner = Autotune(("autotune.yml", extra, log_path, ("[tactician",), placement["autotune"].inventory))
                tuner.start()
                runs.append({"phase": index, "label": label, "thread": tuner})
                log("  %s: autotune in mode auto on %s" % (label, placement["autotune"].name))
        join_clients(clients)
        end = cpu_sample(pids.values())
        for arm, one in clients.items():
            if one.error:
                raise SystemExit("%s, %s: the client failed: %s" % (label, arm, one.error))
            node = placement[arm]
            records[arm].append(phase_record(label, one.result, start, end, pids[node.name], pids.values()))
        log(
            "  %s: %s" % (label, ", ".join("%s %.0f ops/s" % (arm, recs[-1]["ops_s"]) for arm, recs in records.items()))
        )
    if tuner is not None:
        tuner.join()
    autotune_runs = [
        {
            "phase": r["phase"],
            "label": r["label"],
            "rc": r["thread"].rc,
            "seconds": round((r["thread"].ended or 0) - (r["thread"].began or 0), 1),
            "began": r["thread"].began,
            "ended": r["thread"].ended,
        }
        for r in runs
    ]
    decisions = [decision_of(folder, run["began"], run["ended"], args.min_gain) for run in autotune_runs]
    return {
        "turn": turn + 1,
        "placement": {arm: node.name for arm, node in placement.items()},
        "records": records,
        "autotune_runs": autotune_runs,
        "decisions": decisions,
    }


def decision_of(folder, began, ended, min_gain):
    """What the autotune run between began and ended decided, in the demo's words (its plan, the effect)."""
    history = os.path.join(folder, "history.sqlite3")
    if not began or not os.path.exists(history):
        return ["no history written (see the log)"]
    arm_args = argparse.Namespace(out=folder, min_gain=min_gain)
    return demo.decision_lines(arm_args, history, began, until=ended or time.time())


# ----------------------------------------------------------------------------------------------- statistics
def ols_interval(values, columns):
    """(ratio, low, high) of y = intercept + the columns' terms, fitted by least squares: exp of the intercept (the
    effect where every column is 0) with its 95 % t interval from the residuals; None with no degree of freedom
    left or columns that cannot be told apart."""
    n, terms = len(values), 1 + len(columns)
    if n <= terms:
        return None
    X = np.column_stack([np.ones(n)] + [np.asarray(c, dtype=float) for c in columns])
    xtx = X.T @ X
    if abs(np.linalg.det(xtx)) < 1e-12:
        return None
    inverse = np.linalg.inv(xtx)
    beta = inverse @ X.T @ np.asarray(values, dtype=float)
    residuals = np.asarray(values, dtype=float) - X @ beta
    half = effects.t975(n - terms) * math.sqrt(float(residuals @ residuals) / (n - terms) * inverse[0, 0])
    return math.exp(beta[0]), math.exp(beta[0] - half), math.exp(beta[0] + half)


def effect_interval(values, signs):
    """(ratio, low, high) of y = log ratio = effect + sign * node over the turns (ols_interval; low and high None
    with fewer than 3 turns or one orientation, the ratio then the mean's)."""
    if not values:
        return None, None, None
    return ols_interval(values, [signs]) or (math.exp(statistics.fmean(values)), None, None)


def covariate_interval(values, signs, covariate):
    """(ratio, low, high) of y = effect + node * sign + slope * covariate (ols_interval; n - 3 degrees of freedom,
    low and high None with fewer than 4 turns or a design that cannot tell the three apart)."""
    return ols_interval(values, [signs, covariate]) or (effect_interval(values, signs)[0], None, None)


def compare(turns, arm_a, arm_b, pick):
    """Per turn the log of pick(records of arm_a) / pick(records of arm_b), with the sign +1 when arm_a ran on the
    bench node, and the fitted interval."""
    values, signs = [], []
    for turn in turns:
        a, b = pick(turn["records"][arm_a]), pick(turn["records"][arm_b])
        if a and b:
            values.append(math.log(a / b))
            signs.append(1.0 if turn["placement"][arm_a] == NODES[0].name else -1.0)
    return effect_interval(values, signs)


def compare_warmed(turns, arm_a, arm_b, pick):
    """As compare(), with each turn's warm-up log ratio as a covariate (its slope fitted): the warm-up runs both
    nodes on the defaults just before the trace, so it tells what one node does better than the other at that
    moment, where compare() takes the node's part as the same in every turn. The warm-up precedes everything the
    arms do, so it carries no effect of theirs; the fitted slope says how far the warm-up's node part carries
    into the phase (far for read-heavy, not at all for a phase offered less than either node serves)."""
    warm = _phase_pick("warm-up")
    values, signs, covariate = [], [], []
    for turn in turns:
        a, b = pick(turn["records"][arm_a]), pick(turn["records"][arm_b])
        wa, wb = warm(turn["records"][arm_a]), warm(turn["records"][arm_b])
        if a and b and wa and wb:
            values.append(math.log(a / b))
            signs.append(1.0 if turn["placement"][arm_a] == NODES[0].name else -1.0)
            covariate.append(math.log(wa / wb))
    return covariate_interval(values, signs, covariate)


def warm_up_a_a(turns, arm_a, arm_b):
    """The covariate fit's own A/A: the second half of each turn's warm-up against its first half as the covariate
    (the same defaults in both arms throughout). None when the records carry no halves."""
    values, signs, covariate = [], [], []
    for turn in turns:
        a = turn["records"][arm_a][0].get("halves") if turn["records"][arm_a] else None
        b = turn["records"][arm_b][0].get("halves") if turn["records"][arm_b] else None
        if not a or not b or not all(a) or not all(b):
            return None
        values.append(math.log(a[1] / b[1]))
        signs.append(1.0 if turn["placement"][arm_a] == NODES[0].name else -1.0)
        covariate.append(math.log(a[0] / b[0]))
    return covariate_interval(values, signs, covariate)


def turn_ratios(turns, arm_a, arm_b, pick):
    """Each turn's raw ratio of arm_a to arm_b (the node's part still in it)."""
    out = []
    for turn in turns:
        a, b = pick(turn["records"][arm_a]), pick(turn["records"][arm_b])
        out.append(a / b if a and b else None)
    return out


def trace_ops(records):
    return sum(r["ops"] for r in records if r["phase"] != "warm-up")


def _fmt_interval(values):
    ratio, low, high = values
    if ratio is None:
        return "-"
    if low is None:
        return "%.3f (no interval)" % ratio
    return "%.3f [%.3f, %.3f]" % (ratio, low, high)


def render(doc):
    args, turns = doc["args"], doc["turns"]
    arm_a, arm_b = args["arms"]
    labels = [p["phase"] for p in turns[0]["records"][arm_a]]
    lines = [
        "Trace %s (%s), arms %s against %s, %d turns, both arms at the same moment on nodes of the same shape."
        % (args["trace"], ", ".join("%s %d s" % (p[0], p[3]) for p in doc["phases"]), arm_a, arm_b, len(turns)),
        "",
        "| turn | arm | node | total ops (trace) | "
        + " | ".join("%s ops/s" % label for label in labels)
        + " | worst p99 (ms) | failed | rows not found | node CPU | client side CPU |",
        "|---|---|---|---|" + "---|" * len(labels) + "---|---|---|---|---|",
    ]
    for turn in turns:
        for arm in (arm_a, arm_b):
            recs = turn["records"][arm]
            trace = [r for r in recs if r["phase"] != "warm-up"]
            span = sum(r["seconds"] for r in trace) or 1.0
            p99s = [r["p99_ms"] for r in trace if r["p99_ms"] is not None]
            lines.append(
                "| %d | %s | %s | %s | %s | %s | %d | %s | %.2f | %.2f |"
                % (
                    turn["turn"],
                    arm,
                    turn["placement"][arm],
                    f"{trace_ops(recs):,}",
                    " | ".join("%.0f" % r["ops_s"] for r in recs),
                    "%.0f" % max(p99s) if p99s else "-",
                    sum(r["failed"] for r in recs),
                    # runs before rows not found were counted apart have none recorded
                    sum(r["not_found"] for r in recs) if all("not_found" in r for r in recs) else "-",
                    sum(r["node_cpu"] * r["seconds"] for r in trace) / span,
                    sum(r["client_side_cpu"] * r["seconds"] for r in trace) / span,
                )
            )
    lines += [
        "",
        "| %s against %s | turns | ratio [95 %%], the node's part fitted out | the same, with each turn's warm-up "
        "ratio as a covariate |" % (arm_a, arm_b),
        "|---|---|---|---|",
        "| total ops over the trace | %d | **%s** | %s |"
        % (
            len(turns),
            _fmt_interval(compare(turns, arm_a, arm_b, trace_ops)),
            _fmt_interval(compare_warmed(turns, arm_a, arm_b, trace_ops)),
        ),
    ]
    floor = warm_up_a_a(turns, arm_a, arm_b)
    for label in labels:
        pick = _phase_pick(label)
        if label == "warm-up":
            warmed = "%s (its second half, the first as the covariate)" % _fmt_interval(floor) if floor else "-"
        else:
            warmed = _fmt_interval(compare_warmed(turns, arm_a, arm_b, pick))
        tag = "warm-up (the same defaults in both: the A/A floor)" if label == "warm-up" else label
        lines.append(
            "| %s | %d | %s | %s |" % (tag, len(turns), _fmt_interval(compare(turns, arm_a, arm_b, pick)), warmed)
        )
    lines += [
        "",
        "Per turn, %s / %s over the trace (the node's part in it): %s; their warm-ups: %s."
        % (
            arm_a,
            arm_b,
            ", ".join("-" if r is None else "%.3f" % r for r in turn_ratios(turns, arm_a, arm_b, trace_ops)),
            ", ".join(
                "-" if r is None else "%.3f" % r for r in turn_ratios(turns, arm_a, arm_b, _phase_pick("warm-up"))
            ),
        ),
    ]
    for turn in turns:
        for index, block in enumerate(turn.get("decisions") or []):
            run = (turn.get("autotune_runs") or [{}] * (index + 1))[index]
            lines.append("")
            lines.append(
                "Turn %d, autotune at %s (rc %s, %s s):"
                % (turn["turn"], run.get("label"), run.get("rc"), run.get("seconds"))
            )
            lines += ["- %s" % line for line in block]
    return "\n".join(lines) + "\n"


def _phase_pick(label):
    def pick(records):
        found = [r["ops"] for r in records if r["phase"] == label]
        return found[0] if found else None

    return pick


# ----------------------------------------------------------------------------------------------- main
def static_configuration(args, phases):
    """The static-optimized configuration of the whole trace on the surrogate (the plan's baseline). A phase offered
    at a rate every candidate serves counts for nothing in the choice: only the closed-loop phases (all phases when
    there is none) are tuned for."""
    import shape_tuning as stn  # the surrogate + GA of the node shape (its imports are heavy: only for this arm)

    data, metadata = stn.modelstore.load_model(args.model, kind="surrogate", store="cassandra")
    model = stn.sg.Surrogate.from_dict(data)
    throughput = stn.tuner.Throughput(model, hardware=metadata["hardware_profile"])
    work = []
    chosen = [p for p in phases if not p[2]] or list(phases)
    for _label, spec, _rate, seconds in chosen:
        row = stn.st.workload_row(spec, args.records, args.threads)
        row.pop("name")
        work += [row] * max(1, int(seconds // STEP_S))
    result = stn.tuner.tune_many(throughput, [(work, None)], fixed={stn.st.CHUNK: 16}, seed=0)[0]
    return {k: int(round(float(v))) for k, v in result["config"].items() if k in LIVE_SETTERS}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--trace", default="quiet", help="one of %s" % ", ".join(TRACES))
    parser.add_argument("--arms", default="autotune,none", help="two of %s, separated by a comma" % ", ".join(ARMS))
    parser.add_argument("--turns", type=int, default=4, help="turns, the arms swapping nodes every turn")
    parser.add_argument("--phase-s", default=None, help="seconds per phase, separated by commas")
    parser.add_argument("--warmup-s", type=int, default=120, help="the defaults on both nodes before every turn")
    parser.add_argument(
        "--prewarm-s", type=int, default=840, help="at most this long, read-heavy on both nodes before the first turn"
    )
    parser.add_argument("--lead-s", type=float, default=20.0, help="load in a phase before autotune observes it")
    parser.add_argument("--min-gain", type=float, default=0.05)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--records", type=int, default=_shape.RECORDS)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--out", default=os.path.join(_shape.BENCH, "shape-dynamic"))
    parser.add_argument("--render", default=None, help="print the tables of a saved run (its JSON file) and stop")
    args = parser.parse_args(argv)
    if args.render:
        return args
    if args.trace not in TRACES:
        parser.error("--trace: %r is not allowed; choose one of %s" % (args.trace, ", ".join(TRACES)))
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if len(arms) != 2 or len(set(arms)) != 2 or any(a not in ARMS for a in arms):
        parser.error("--arms: %r: give two different arms of %s, e.g. autotune,none" % (args.arms, ", ".join(ARMS)))
    args.arms = arms
    if args.turns < 1:
        parser.error("--turns: %r: give 1 or more (3 or more for an interval)" % args.turns)
    labels, lengths = TRACES[args.trace]
    if args.phase_s:
        try:
            lengths = [int(float(v)) for v in args.phase_s.split(",")]
        except ValueError:
            parser.error("--phase-s: %r: give %d numbers of seconds separated by commas" % (args.phase_s, len(labels)))
        if len(lengths) != len(labels) or min(lengths) < 2 * STEP_S:
            parser.error(
                "--phase-s: %r: give %d phase lengths of at least %d s" % (args.phase_s, len(labels), 2 * STEP_S)
            )
    args.phases = [(label, spec, rate, seconds) for (label, spec, rate), seconds in zip(labels, lengths, strict=True)]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as handle:
            print(render(json.load(handle)))
        return 0
    out, stamp, log, _server_cpus = _shape.start_run("shape-dynamic", args.out)
    started = []
    try:
        for node in NODES:
            if not _shape.node_running(node):
                log("starting %s (%s)" % (node.name, os.path.relpath(node.inventory, ROOT)))
                started.append(node)
                _shape.start_node(node)
            _shape.ensure_loaded(args.records, chunks=(16,), log=log, node=node)
        shape = _shape.describe()
        log(shape)
        conf_texts = {}
        for node in NODES:
            with open(conf_file(node), encoding="utf-8") as handle:
                conf_texts[node.name] = handle.read()
        key_cache = {node.name: ke.defaults_key_cache(node, log=log) for node in NODES}
        static_config = static_configuration(args, args.phases) if "static" in args.arms else {}
        if static_config:
            log("static-optimized on the surrogate: %s" % json.dumps(static_config, sort_keys=True))
        doc = {
            "args": dict(vars(args), phases=None),
            "phases": args.phases,
            "static": static_config,
            "shape": shape,
            "turns": [],
        }
        if args.prewarm_s > 0:
            log(
                "pre-warm: read-heavy on both nodes, not measured, until every node is steady (at most %d s)"
                % args.prewarm_s
            )
            doc["prewarm"] = prewarm(args, log)
        path = os.path.join(out, "shape-dynamic-%s.json" % stamp)
        arm_a, arm_b = args.arms
        try:
            for turn in range(args.turns):
                first, second = (NODES[0], NODES[1]) if turn % 2 == 0 else (NODES[1], NODES[0])
                record = run_turn(
                    turn,
                    {arm_a: first, arm_b: second},
                    args,
                    args.phases,
                    out,
                    conf_texts,
                    key_cache,
                    static_config,
                    log,
                )
                doc["turns"].append(record)
                with open(path, "w", encoding="utf-8") as handle:
                    json.dump(doc, handle, indent=1, default=str)
        finally:
            for node in NODES:
                if _shape.node_running(node):
                    reset_node(node, conf_texts[node.name], key_cache[node.name], log)
        text = render(doc)
        with open(os.path.join(out, "shape-dynamic-%s.md" % stamp), "w", encoding="utf-8") as handle:
            handle.write(text)
        print(text)
    finally:
        for node in started:
            log("stopping %s" % node.name)
            _shape.playbook("lab_down.yml", node)
    return 0


if __name__ == "__main__":
    sys.exit(main())
