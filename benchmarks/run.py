# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One entry point for the benchmarks: runs every experiment, short or full, one after the other, and writes into a
results folder one Markdown table and one CSV per experiment, PNG plots, and summary.md with every figure next to
the paper's, the command and the machine it came from.

    .venv/bin/python benchmarks/run.py --servers start    # make bench: the full set, servers included
    .venv/bin/python benchmarks/run.py --short            # make bench-short: the simulations, short sizes
    .venv/bin/python benchmarks/run.py --short --servers start   # every experiment at its short size
    .venv/bin/python benchmarks/run.py --short --only dynamic hetero --out results/try
    .venv/bin/python benchmarks/run.py --servers use      # the servers are up already (make lab, bench node)
    .venv/bin/python benchmarks/run.py --list

The simulations need no server. The experiments that measure real servers need the lab (3 Cassandra nodes, the
Redis cluster) or the bench node (one Cassandra node on 127.0.0.31). With --servers skip (the default) they are
listed as skipped, with what they need; with --servers use they run against servers that are up; with --servers
start run.py brings up each site that is not up yet (playbooks/lab_up.yml), runs what a site's experiments need
first when it is missing (the bench node's resource model: playbooks/calibrate.yml), runs them, and stops the site
again if it started it. Server experiments run after the simulations, one site at a time.
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import _control
import _report
from _common import ROOT, use_collection

use_collection()

from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock as rolling_lock

RESULTS = os.path.join(ROOT, "results")
BENCH_NODE = "the bench Cassandra node (ansible-playbook -i inventories/bench playbooks/lab_up.yml)"
LAB = "the lab's Cassandra and Redis clusters (make lab)"


@dataclass(frozen=True)
class Site:
    """Servers some experiments need: how to tell they are up, bring them up and stop them."""

    name: str
    inventory: str | None
    probe: tuple | None  # (address, port) that answers when the site is up; None: the script starts its own
    title: str

    def playbook(self, name):
        argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")]
        if self.inventory:
            argv += ["-i", self.inventory]
        return argv + [os.path.join("playbooks", name)]


SITES = {
    # Experiments that start a server of their own (and stop it by its PID): nothing to bring up, but they still
    # run only with --servers, as they take minutes of the machine's server CPUs.
    "own": Site("own", None, None, "a server the experiment starts itself"),
    "lab": Site("lab", None, ("127.0.0.1", 9042), "the lab (3 Cassandra nodes, Redis cluster)"),
    "bench": Site("bench", os.path.join("inventories", "bench"), ("127.0.0.31", 9042), "the bench Cassandra node"),
}


@dataclass(frozen=True)
class Prerequisite:
    """A file a bench experiment needs before it runs: made here by a playbook, or else shipped with the project."""

    local: str
    shipped: str | None
    playbook: str
    what: str

    def found(self):
        """The local file when there is one, else the shipped one when there is one, else None."""
        for path in (self.local, self.shipped):
            if path and os.path.exists(os.path.join(ROOT, path)):
                return path
        return None


# The bench node's resource model: the local calibration when there is one, else the one calibrated on this
# project's bench node (2 CPUs, 1 GiB heap), shipped because a calibration takes about 12 minutes of the full set.
RESOURCE_MODEL = Prerequisite(
    os.path.join(".lab", "bench", "models", "cassandra-resource.json"),
    os.path.join("catalog", "models", "cassandra-bench-resource.json"),
    "calibrate.yml",
    "the bench node's resource model",
)
PREREQUISITES = {"resource_accuracy": [RESOURCE_MODEL]}


@dataclass(frozen=True)
class Experiment:
    name: str
    script: str
    title: str
    paper: str
    short: tuple = ("--short",)
    full: tuple = ()
    needs: str | None = None
    outputs: bool = True
    extra: tuple = ()
    site: str | None = None
    # How long it takes on this project's machine (2 vCPUs), in minutes (short size, full size), the servers'
    # bring-up excluded (SITE_MINUTES): measured, in docs/benchmarks.md "How long the set takes", which names each
    # figure's run; None: nothing measured at that size. estimated_full: the full size has not run at exactly that
    # size, and its figure comes from the nearest run.
    minutes: tuple = (None, None)
    estimated_full: bool = False

    @property
    def server(self):
        return self.needs is not None


EXPERIMENTS = (
    Experiment(
        "dynamic",
        "plan_dynamic.py",
        "Dynamic reconfiguration: HPC job queue (1, 5, 10 jobs) and abrupt switching",
        "seed 001 (IRIS) Fig. 4-6",
        short=("--short", "--timing-repeats", "1"),
        minutes=(0.3, 1.3),
    ),
    Experiment(
        "safety",
        "plan_safety.py",
        "Safe switching: the guarded controller against static-optimized on hard traces (drift, storms, flapping, "
        "daily, MG-RAST-like) and the papers' ones",
        "issue criteria; seed 001 (IRIS) lookahead from accuracy",
        short=("--short", "--seeds", "1"),
        minutes=(0.9, 11.0),
        estimated_full=True,
    ),
    Experiment(
        "safety_new_cluster",
        "plan_safety.py",
        "Safe switching with no history before the controller starts (a cluster just put under autotune)",
        "issue criteria",
        short=("--short", "--seeds", "1", "--prehistory-s", "0"),
        full=("--prehistory-s", "0"),
        minutes=(0.4, 9.0),
        estimated_full=True,
    ),
    Experiment(
        "scale_out",
        "scale_out.py",
        "Scale-out: 4, 8, 32 nodes, CL ONE and QUORUM, rolling vs aggressive vs complete-sets",
        "seed 001 (IRIS) Fig. 5",
        minutes=(0.1, 0.6),
    ),
    Experiment(
        "hetero",
        "hetero_perf.py",
        "Heterogeneous perf/$: Cassandra and Redis, VM catalog, complete-sets",
        "seed 002 (OptimusCloud) Fig. 8-12",
        minutes=(0.1, 0.4),
    ),
    Experiment(
        "noise",
        "noise_sensitivity.py",
        "Noise sensitivity: forecast, phase duration, throughput predictor",
        "seed 001 Fig. 7-8, seed 002 Fig. 14",
        minutes=(0.1, 2.8),
    ),
    Experiment(
        "forecast_accuracy",
        "forecast_accuracy.py",
        "Forecast accuracy per horizon",
        "seed 001 (IRIS) Table 1",
        extra=("--jobs", "1"),
        minutes=(0.1, 0.8),
    ),
    Experiment(
        "tactic_decision",
        "tactic_decision.py",
        "Tactic advisor: decision time, accuracy, online learning after drift",
        "seed 000 (PaSTA)",
        minutes=(0.0, 0.1),
    ),
    Experiment(
        "rolling_availability",
        "rolling_availability.py",
        "Availability during a rolling reconfiguration, CL ONE",
        "seed 001 section 4.5, seed 002 complete-sets",
        short=("--stores", "cassandra"),
        needs=LAB,
        outputs=False,
        site="lab",
        minutes=(7.8, 9.1),
    ),
    Experiment(
        "rolling_availability_quorum",
        "rolling_availability.py",
        "Availability during a rolling reconfiguration, CL QUORUM",
        "seed 001 section 4.5, seed 002 complete-sets",
        # Cassandra only: the lab's Redis shards have one replica (RF 2), so R = RF - QUORUM = 0 and the roll
        # refuses, changing nothing (a check of its own in rolling_availability at CL ONE and in the unit tests).
        short=("--stores", "cassandra"),
        full=("--stores", "cassandra"),
        needs=LAB,
        outputs=False,
        extra=("--cl", "QUORUM"),
        site="lab",
        minutes=(7.4, 7.7),
    ),
    Experiment(
        "rolling_peer_down",
        "rolling_availability.py",
        "A peer killed while the roll has a node down, CL QUORUM: the roll stops, nothing lost",
        "seed 001 section 4.5 (availability during reconfiguration)",
        short=("--stores", "cassandra"),
        full=("--stores", "cassandra"),
        needs=LAB,
        outputs=False,
        extra=("--cl", "QUORUM", "--scenario", "peer"),
        site="lab",
        minutes=(7.3, 8.0),
        estimated_full=True,
    ),
    Experiment(
        "surrogate_accuracy",
        "surrogate_accuracy.py",
        "Throughput surrogate R^2 / RMSE on held-out configurations",
        "seed 002 (OptimusCloud) R^2 0.91",
        short=("--splits", "5"),
        minutes=(0.0, 0.0),
    ),
    Experiment(
        "resource_accuracy",
        "resource_accuracy.py",
        "Resource usage per key distribution",
        "seed 003 (Cruz et al.) Table 4",
        needs="the bench Cassandra node and its calibrated resource model (ansible-playbook -i inventories/bench "
        "playbooks/lab_up.yml, then ansible-playbook -i inventories/bench playbooks/calibrate.yml)",
        site="bench",
        minutes=(3.1, 14.4),
    ),
    Experiment(
        "baselines",
        "live_baselines.py",
        "Autotune against doing nothing and static-optimized on the lab's servers, same traces, in turns",
        "issue criteria; seed 001 (IRIS) +18.9 % / +25.7 % over static-optimized",
        needs=LAB,
        site="lab",
        minutes=(29.7, 227.0),
        estimated_full=True,
    ),
    Experiment(
        "observe_accuracy",
        "observe_accuracy.py",
        "Observe accuracy: what the load driver did against what observe saw",
        "seed 000 monitoring features",
        # A (reads and updates) and E (scans and inserts): every kind of operation observe counts. B and C (95 and
        # 100 % reads) left the full set to make room for the tuning gain's design of the surrogate + GA.
        short=("--workloads", "a"),
        full=("--workloads", "a", "e"),
        needs=LAB,
        outputs=False,
        site="lab",
        minutes=(2.0, 4.3),
    ),
    Experiment(
        "tactic_bootstrap",
        "tactic_bootstrap.py",
        "Tactic runs on a real node (the advisor's bootstrap)",
        "seed 000 (PaSTA) 4.1",
        needs=BENCH_NODE,
        outputs=False,
        site="bench",
        minutes=(1.8, 6.1),
    ),
    Experiment(
        "redis_memory",
        "redis_memory.py",
        "Redis maxmemory and maxmemory-policy under memory pressure: hit ratio and requests/s against the A/A floor",
        "issue: a lab where tuning matters",
        # A redis-server of its own on the server CPUs (127.0.0.32:6421) under a cache-aside client: the A/A design
        # and four candidates, 4 ABBA pairs of 30 s windows each, about 27 minutes; the short set about 6.
        needs="redis-server (Debian's package, which make bootstrap installs; the script starts and stops its own)",
        site="own",
        minutes=(5.2, 27.0),
    ),
    Experiment(
        "knob_effects",
        "knob_effects.py",
        "Knob effects on the node shape of a real one, with the A/A noise floor (ABBA windows on a warm node)",
        "issue: a lab where tuning matters",
        # The data sets (4M rows, two tables) are written once (about 3 min) and linked in (1-2 min); then a 3 min
        # warm-up, the A/A design (16 windows of 60 s), 10 windows of 30 s per live knob and 10 client runs of
        # 50 s for the chunk length: about 45 minutes. More workloads and knobs: knob_effects.py --workloads/--knobs.
        full=(
            "--workloads",
            "b",
            "--knobs",
            "concurrent_reads,key_cache_size,compression_chunk_kb",
            "--warmup-s",
            "180",
            "--aa-pairs",
            "8",
            "--pairs",
            "5",
        ),
        needs=BENCH_NODE,
        site="bench",
        minutes=(18.6, 45.0),
        estimated_full=True,
    ),
    Experiment(
        "shape_racing",
        "shape_racing.py",
        "Iterated racing on the node shape (live knobs and the twin tables' chunk length), warm windows as its "
        "evaluations, on the budget of windows the shape surrogate was fitted on",
        "issue: a lab where tuning matters; seed 004 (irace)",
        # 16 windows of 50 s after a 5 min warm-up, the other table rewarmed 2 min at each change, the row cache in
        # the space and the node's disk reads capped as in shape_tuning's run: about 33 minutes for B. Its best is
        # re-measured beside the surrogate + GA's and cassandra_latest by shape_tuning (--raced, this race's
        # folder). The short set: 4 windows of 20 s after a 1 min warm-up, about 4 minutes.
        short=("--budget", "4", "--window-s", "20", "--warmup-s", "60", "--rewarm-s", "30"),
        full=("--workload", "b", "--budget", "16", "--row-cache", "--disk-read-iops", "1200"),
        needs=BENCH_NODE,
        outputs=False,
        site="bench",
        minutes=(5.8, 33.0),
    ),
    Experiment(
        "shape_tuning",
        "shape_tuning.py",
        "Surrogate + GA on the node shape (the shape surrogate the repository ships) against the defaults, with the "
        "defaults against themselves as the floor, rounds of client runs in rotated order",
        "issue: a lab where tuning matters; seed 002 (surrogate + GA)",
        # The full set: the concurrent design (docs/benchmarks.md "Two nodes that agree"), every node's disk reads
        # capped at 1,200 a second, the tables compacted first; phases of a 5 min warm-up and 4 pairs of 60 s
        # windows at the same moment: the node A/A, the surrogate + GA's configuration, the best of shape_racing's
        # race (the newest finished one in its folder) and cassandra_latest on nodes of their own, started and
        # stopped by the script. The short set: 2 rounds of three arms on the bench node, 20 s windows, about 3
        # minutes.
        short=("--rounds", "2", "--window-s", "20", "--settle-s", "10"),
        full=(
            "--workloads",
            "b",
            "--design",
            "concurrent",
            "--rounds",
            "4",
            "--latest",
            "--raced",
            ".lab/bench/shape-racing",
            "--disk-read-iops",
            "1200",
            "--warmup-s",
            "300",
            "--compact-first",
            "--table-state",
        ),
        needs=BENCH_NODE,
        outputs=False,
        site="bench",
        minutes=(3.6, 51.0),
    ),
    Experiment(
        "shape_dynamic",
        "shape_dynamic.py",
        "Autotune against doing nothing on the node shape, both arms at the same moment on two nodes of the same "
        "shape, swapping nodes every turn, with the warm-up's A/A beside it",
        "issue criteria (the real-lab comparison on the node shape); seed 001 (IRIS) +18.9 % / +25.7 %",
        # A turn is the trace once on both nodes at the same moment (the compactions of the turn before waited for,
        # a warm-up of the defaults on both): about 19 minutes for the quiet trace, 4 turns. The short set: two
        # turns of the mixed trace in 90 s phases, about 12 minutes after the nodes' pre-warm (until both are
        # steady, at most 14 min: 10 min from a fresh clone, which took 25 min in all with the data sets written).
        short=("--trace", "mixed", "--turns", "2", "--phase-s", "90,90,90", "--warmup-s", "60"),
        full=("--trace", "quiet", "--turns", "4"),
        needs=BENCH_NODE,
        outputs=False,
        site="bench",
        minutes=(24.8, 84.0),
    ),
    # Last: the longest, and its races and rounds start from scratch in the results folder.
    Experiment(
        "tuning_gain",
        "tuning_gain.py",
        "Real tuning gain: default vs racing vs surrogate + GA, same budget, YCSB A and E, 10 rounds side by side",
        "seed 004 (irace)",
        # The live space on one warm JVM and the rows in place: a run is about 20 s on 2 CPUs (a restart and a cold
        # load made it 40-60 s, and the full set did not fit in 90 minutes). 180 s of budget are a dozen runs per
        # race, as many for the surrogate's design, and 10 rounds of 3 configurations are 30 more per workload:
        # about 18 minutes per workload in all.
        short=(
            "--short",
            "--space",
            "live",
            "--workloads",
            "a",
            "--budget-s",
            "60",
            "--rounds",
            "2",
            "--run-s",
            "5",
            "--warmup-s",
            "10",
        ),
        full=("--space", "live", "--budget-s", "180", "--rounds", "10", "--run-s", "10", "--warmup-s", "20"),
        needs=BENCH_NODE,
        outputs=False,
        site="bench",
        minutes=(6.4, 36.3),
    ),
)
BY_NAME = {e.name: e for e in EXPERIMENTS}

# Bringing a site up and stopping it, in minutes, when the run starts it.
SITE_MINUTES = {"own": 0.0, "lab": 2.6, "bench": 0.8}


def expected(experiments, short, servers):
    """(minutes, unmeasured, estimated): the wall time the chosen experiments are expected to take at their size,
    their sites' bring-up included when servers is start (a site already up takes none), the names with no figure
    at that size, and the minutes of the total that come from a run of another size (an experiment's estimated_full)."""
    index = 0 if short else 1
    total, unmeasured, sites, estimated = 0.0, [], [], 0.0
    for experiment in experiments:
        if experiment.server and servers == "skip":
            continue
        minutes = experiment.minutes[index]
        if minutes is None:
            unmeasured.append(experiment.name)
        else:
            total += minutes
            if not short and experiment.estimated_full:
                estimated += minutes
        if experiment.server and experiment.site not in sites:
            sites.append(experiment.site)
    if servers == "start":
        for name in sites:
            if not site_up(SITES[name], timeout=0.5):
                if SITE_MINUTES.get(name) is None:
                    unmeasured.append("bringing up " + SITES[name].title)
                else:
                    total += SITE_MINUTES[name]
    return total, unmeasured, estimated


def duration_text(minutes):
    """40 s, 45 min, 2 h 05 min."""
    if minutes < 1:
        return "%.0f s" % (minutes * 60.0)
    minutes = int(round(minutes))
    return "%d min" % minutes if minutes < 60 else "%d h %02d min" % divmod(minutes, 60)


def expected_line(experiments, short, servers):
    """What run.py prints before it starts: how long the chosen set is expected to take on this project's machine."""
    minutes, unmeasured, estimated = expected(experiments, short, servers)
    line = "expected: about %s on 2 CPUs" % duration_text(minutes)
    if estimated:
        line += " (%s of it from runs of a nearby size)" % duration_text(estimated)
    line += ", docs/benchmarks.md How long the set takes"
    if unmeasured:
        line += ", plus %s, not measured at this size yet" % ", ".join(unmeasured)
    return line


# The rolling locks the lab's rolls take on this controller (playbooks/rolling_reconfigure.yml: the cluster's name
# is its store when the inventory names none).
LAB_LOCKS = ("cassandra", "redis")


def stopped_locks(names=LAB_LOCKS, lock_dir=None):
    """The locks among names that a stopped roll keeps in lock_dir (default: the rolling lock's own folder), as
    lines saying when, where and why, and how to give them back. A stopped roll's lock holds until a person
    releases it, so every roll of that cluster in this run would stop at its first step."""
    lock_dir = lock_dir or rolling_lock.default_lock_dir()
    lines = []
    for name in names:
        records = rolling_lock.FileRecords(name, lock_dir)
        stopped = (records.read() or {}).get("stopped")
        if not isinstance(stopped, dict):
            continue
        lines.append(
            "warning: the rolling lock of cluster %s (%s) is kept by a roll that stopped at %s on %s: %s; "
            "every roll of %s in this run will stop at its lock. Once the cluster is whole, release it: "
            ".venv/bin/ansible localhost -m tactician.nosql.rolling_lock -a 'name=%s state=released force=true'"
            % (
                name,
                records.path,
                stopped.get("at") or "an unknown time",
                stopped.get("node") or "an unknown node",
                str(stopped.get("reason") or "no reason kept").strip().rstrip("."),
                name,
                name,
            )
        )
    return lines


def skip_line(experiment):
    return "skipped: needs %s; rerun with --servers start (or --servers use once it is up)" % experiment.needs


def site_up(site, timeout=2.0):
    """Whether the site's probe address accepts a connection (always, for a site the experiment starts itself)."""
    if site.probe is None:
        return True
    try:
        with socket.create_connection(site.probe, timeout=timeout):
            return True
    except OSError:
        return False


def run_logged(argv, log_path, label):
    """Run a command (a playbook) with its output in log_path; returns (ok, seconds)."""
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ %s\n" % shown(argv))
        log.flush()
        try:
            rc = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        except OSError as exc:
            log.write("%s\n" % exc)
            rc = -1
    seconds = time.monotonic() - started
    print("  %s: %s in %.0f s (%s)" % (label, "ok" if rc == 0 else "FAILED", seconds, os.path.basename(log_path)))
    return rc == 0, seconds


class Servers:
    """Brings sites up for their experiments (--servers start) and stops the ones it started."""

    def __init__(self, mode, out_dir):
        self.mode = mode
        self.out_dir = out_dir
        self.started = []
        self.steps = []  # (what, status, seconds) for summary.md

    def ready(self, site):
        """None when the site's experiments can run, else why they cannot."""
        if site_up(site):
            return None
        if self.mode != "start":
            return "%s is not up" % site.title
        ok, seconds = run_logged(
            site.playbook("lab_up.yml"), os.path.join(self.out_dir, "%s-up.log" % site.name), "bring up %s" % site.title
        )
        self.steps.append(("bring up %s" % site.title, "ok" if ok else "failed", seconds))
        if not ok:
            return "bringing up %s failed (see %s-up.log)" % (site.title, site.name)
        self.started.append(site)
        return None

    def prepare(self, experiment, site):
        """None when what the experiment needs is there (made now with --servers start), else why not."""
        for need in PREREQUISITES.get(experiment.name, []):
            if need.found():
                continue
            if self.mode != "start":
                return "%s is missing (%s)" % (need.what, need.local)
            ok, seconds = run_logged(
                site.playbook(need.playbook), os.path.join(self.out_dir, "%s-prepare.log" % experiment.name), need.what
            )
            self.steps.append(("make %s (%s)" % (need.what, need.playbook), "ok" if ok else "failed", seconds))
            if not ok:
                return "making %s failed (see %s-prepare.log)" % (need.what, experiment.name)
        return None

    def done_with(self, site):
        """Stop the site when this run started it."""
        if site not in self.started:
            return
        ok, seconds = run_logged(
            site.playbook("lab_down.yml"), os.path.join(self.out_dir, "%s-down.log" % site.name), "stop %s" % site.title
        )
        self.steps.append(("stop %s" % site.title, "ok" if ok else "failed", seconds))
        self.started.remove(site)

    def close(self):
        for site in list(self.started):
            self.done_with(site)


def ordered(experiments):
    """Simulations first, then the experiments of each site together (so a site is brought up once)."""
    order = [None] + list(SITES)
    return sorted(experiments, key=lambda e: order.index(e.site if e.server else None))


def command(experiment, short, out_dir, lab_model=True):
    """The argument list that runs one experiment, writing its table and CSV into out_dir when it can."""
    args = [sys.executable, os.path.join("benchmarks", experiment.script)]
    args += list(experiment.short if short else experiment.full)
    args += list(experiment.extra)
    if experiment.name == "dynamic" and not lab_model:
        args += ["--model", os.path.join("catalog", "models", "cassandra-bench.json")]
    if experiment.name == "resource_accuracy":
        args += ["--model", RESOURCE_MODEL.found() or RESOURCE_MODEL.local]
    if experiment.outputs:
        args += ["--markdown", os.path.join(out_dir, experiment.name + ".md")]
        args += ["--csv", os.path.join(out_dir, experiment.name + ".csv")]
    if experiment.name == "tactic_bootstrap":
        args += ["--out", os.path.join(out_dir, "tactic_bootstrap.jsonl")]
    if experiment.name == "tuning_gain":
        args += ["--work-dir", os.path.join(out_dir, "tuning_gain")]
    return args


def shown(args):
    """A command line as a person would type it in the repository (no absolute paths of this machine)."""
    out = []
    for arg in args:
        if arg == sys.executable:
            out.append(".venv/bin/python")
        elif os.path.isabs(arg) and arg.startswith(ROOT):
            out.append(os.path.relpath(arg, ROOT))
        else:
            out.append(arg)
    return " ".join(out)


def git_revision():
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" with local changes" if dirty else "")


def model_lines(log_text):
    """The lines of an experiment's output that say which throughput model it used."""
    return [line.strip() for line in log_text.splitlines() if line.startswith("model:")]


def run_one(experiment, short, out_dir, timeout=None, lab_model=True):
    """Run one experiment; its output goes to <name>.log and the console. Returns the result record."""
    args = command(experiment, short, out_dir, lab_model)
    log_path = os.path.join(out_dir, experiment.name + ".log")
    started = time.monotonic()
    status = "ok"
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ %s\n" % shown(args))
        log.flush()
        try:
            process = subprocess.Popen(
                args,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg"),
            )
            for line in process.stdout:
                log.write(line)
                sys.stdout.write("    " + line)
                sys.stdout.flush()
                if timeout and time.monotonic() - started > timeout:
                    process.kill()
                    status = "failed: stopped after %d s (--timeout)" % timeout
                    break
            rc = process.wait()
            if status == "ok" and rc != 0:
                status = "failed: exit code %d (see %s.log)" % (rc, experiment.name)
        except OSError as exc:
            status = "failed: %s" % exc
    wall = time.monotonic() - started
    with open(log_path, encoding="utf-8") as handle:
        text = handle.read()
    record = dict(name=experiment.name, status=status, wall_s=wall, command=shown(args), models=model_lines(text))
    record.update(report(experiment, out_dir))
    if experiment.outputs is False and status == "ok":
        # The script prints its table: keep its output as the experiment's Markdown.
        with open(os.path.join(out_dir, experiment.name + ".md"), "w", encoding="utf-8") as handle:
            handle.write("```\n%s```\n" % text)
    return record


def report(experiment, out_dir):
    """Headline table and plots from the experiment's CSV, when it wrote one."""
    path = os.path.join(out_dir, experiment.name + ".csv")
    out = {"headline": None, "plots": [], "report_error": None}
    if not os.path.exists(path):
        return out
    try:
        rows = _report.read_csv(path)
        if experiment.name in _report.HEADLINES and rows:
            out["headline"] = _report.HEADLINES[experiment.name](rows)
        if experiment.name in _report.PLOTS and rows:
            out["plots"] = [os.path.basename(p) for p in _report.PLOTS[experiment.name](rows, out_dir)]
    except Exception as exc:  # a broken plot must not hide the numbers
        out["report_error"] = "%s: %s" % (type(exc).__name__, exc)
    return out


def summary(records, info, out_dir):
    """summary.md: the machine, the command, every experiment's status and its headline table."""
    machine = info["machine"]
    lines = [
        "# Benchmark results (%s)" % info["size"],
        "",
        "- date: %s (UTC), total wall time %.1f min (%s)"
        % (info["date"], info["wall_s"] / 60.0, info.get("expected", "expected: -")),
        "- command: `%s`" % info["command"],
        "- revision: %s" % info["revision"],
        "- machine: %d x %s, %s GiB RAM, Linux %s, Python %s; load average at the start %s (other work shares the "
        "CPUs: timings are rough)"
        % (
            machine["cpus"],
            machine["cpu_model"],
            machine["memory_gb"],
            machine["kernel"],
            machine["python"],
            machine["load_at_start"],
        ),
        "",
    ]
    for what, status, seconds in info.get("server_steps") or []:
        lines.append("- servers: %s, %s in %.0f s" % (what, status, seconds))
    for line in info.get("warnings") or []:
        lines.append("- %s" % line)
    lines += [
        "",
        "| experiment | paper | status | wall time | expected | files |",
        "|---|---|---|---|---|---|",
    ]
    for record in records:
        experiment = BY_NAME[record["name"]]
        files = [
            f for f in (record["name"] + ".md", record["name"] + ".csv") if os.path.exists(os.path.join(out_dir, f))
        ]
        files += record.get("plots") or []
        minutes = experiment.minutes[0 if info["size"] == "short" else 1]
        lines.append(
            "| %s | %s | %s | %s | %s | %s |"
            % (
                experiment.name,
                experiment.paper,
                record["status"],
                "-" if record.get("wall_s") is None else "%.0f s" % record["wall_s"],
                "-" if minutes is None or record.get("wall_s") is None else "%.0f s" % (minutes * 60.0),
                ", ".join("[%s](%s)" % (f, f) for f in files) or "-",
            )
        )
    lines.append("")
    for record in records:
        experiment = BY_NAME[record["name"]]
        lines += ["## %s: %s (%s)" % (experiment.name, experiment.title, experiment.paper), ""]
        if record["status"].startswith("skipped"):
            lines += [record["status"], ""]
            continue
        lines += ["`%s` - %s, %.0f s" % (record["command"], record["status"], record["wall_s"]), ""]
        for model in record.get("models") or []:
            lines.append("- %s" % model)
        if record.get("models"):
            lines.append("")
        if record.get("headline"):
            header, body = record["headline"]
            lines += _report.markdown_table(header, body) + [""]
        elif os.path.exists(os.path.join(out_dir, record["name"] + ".md")):
            lines += ["See [%s.md](%s.md)." % (record["name"], record["name"]), ""]
        if record.get("report_error"):
            lines += ["(headline or plot failed: %s)" % record["report_error"], ""]
        for plot in record.get("plots") or []:
            lines += ["![%s](%s)" % (plot, plot), ""]
    with open(os.path.join(out_dir, "summary.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    return os.path.join(out_dir, "summary.md")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="the short size of every experiment (< 10 min here)")
    parser.add_argument("--out", help="results folder (default results/<UTC timestamp>/)")
    parser.add_argument("--only", nargs="+", choices=list(BY_NAME), help="run only these experiments")
    parser.add_argument(
        "--servers",
        choices=["skip", "use", "start"],
        default="skip",
        help="the experiments that need servers: skip them, use servers that are up, or start (and afterwards stop) "
        "what is not up",
    )
    parser.add_argument("--with-servers", action="store_true", help="the same as --servers use")
    parser.add_argument(
        "--no-lab-model",
        action="store_true",
        help="use only what the repository ships, as a fresh clone would: its copy of the bench surrogate, "
        "catalog/models/cassandra-bench.json, instead of the bench's own .lab/bench/models/cassandra-surrogate.json",
    )
    parser.add_argument("--timeout", type=float, help="stop an experiment after this many seconds")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    args = parser.parse_args(argv)
    if args.list:
        for e in EXPERIMENTS:
            short, full = ("-" if m is None else duration_text(m) for m in e.minutes)
            print(
                "%-28s short %-8s full %-9s %-40s %s"
                % (e.name, short, full, e.paper, "needs " + e.needs if e.server else "no server")
            )
        return 0
    now = datetime.datetime.now(datetime.UTC)
    out_dir = os.path.abspath(args.out or os.path.join(RESULTS, _control.utc_stamp(now)))
    os.makedirs(out_dir, exist_ok=True)
    info = dict(
        size="short" if args.short else "full",
        date=now.strftime("%Y-%m-%d %H:%M"),
        command=shown([sys.executable, os.path.join("benchmarks", "run.py"), *(argv or sys.argv[1:])]),
        revision=git_revision(),
        machine=_control.machine(),
    )
    if args.with_servers and args.servers == "skip":
        args.servers = "use"
    print("results in %s" % os.path.relpath(out_dir, ROOT))
    started = time.monotonic()
    records = []
    servers = Servers(args.servers, out_dir)
    chosen = ordered([e for e in EXPERIMENTS if not args.only or e.name in args.only])
    info["expected"] = expected_line(chosen, args.short, args.servers)
    print(info["expected"], flush=True)
    if args.servers != "skip" and any(e.site == "lab" for e in chosen):
        info["warnings"] = stopped_locks()
        for line in info["warnings"]:
            print(line, flush=True)
    try:
        for index, experiment in enumerate(chosen):
            site = SITES.get(experiment.site) if experiment.server else None
            if experiment.server and args.servers == "skip":
                line = skip_line(experiment)
                print("%s: %s" % (experiment.name, line))
                records.append(dict(name=experiment.name, status=line, wall_s=None))
                continue
            why = (servers.ready(site) or servers.prepare(experiment, site)) if site else None
            if why:
                line = "skipped: %s" % why
                print("%s: %s" % (experiment.name, line))
                records.append(dict(name=experiment.name, status=line, wall_s=None))
            else:
                lab_model = not args.no_lab_model
                print(
                    "%s: %s" % (experiment.name, shown(command(experiment, args.short, out_dir, lab_model))),
                    flush=True,
                )
                record = run_one(experiment, args.short, out_dir, args.timeout, lab_model)
                print("%s: %s in %.1f s" % (experiment.name, record["status"], record["wall_s"]), flush=True)
                records.append(record)
            later = [e.site for e in chosen[index + 1 :] if e.server]
            if site and site.name not in later:
                servers.done_with(site)
    finally:
        servers.close()
    info["wall_s"] = time.monotonic() - started
    info["server_steps"] = servers.steps
    path = summary(records, info, out_dir)
    print("wrote %s (total %.1f min)" % (os.path.relpath(path, ROOT), info["wall_s"] / 60.0))
    return 1 if any(r["status"].startswith("failed") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
