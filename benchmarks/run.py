# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""One entry point for the benchmarks: runs every experiment, short or full, one after the other, and writes into a
results folder one Markdown table and one CSV per experiment, PNG plots, and summary.md with every figure next to
the paper's, the command and the machine it came from.

    .venv/bin/python benchmarks/run.py --short            # make bench-short: under 10 minutes on 2 CPUs
    .venv/bin/python benchmarks/run.py                    # make bench: under 90 minutes
    .venv/bin/python benchmarks/run.py --short --only dynamic hetero --out results/try
    .venv/bin/python benchmarks/run.py --with-servers     # also the experiments that need the lab or bench node
    .venv/bin/python benchmarks/run.py --list

The simulations need no server. The experiments that measure real servers are skipped, with what they need and the
command that brings it up, unless --with-servers is given; run.py never starts or stops a server itself.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import _control
import _report
from _common import ROOT

RESULTS = os.path.join(ROOT, "results")
BENCH_NODE = "the bench Cassandra node (ansible-playbook -i inventories/bench playbooks/lab_up.yml)"


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
    ),
    Experiment(
        "scale_out",
        "scale_out.py",
        "Scale-out: 4, 8, 32 nodes, CL ONE and QUORUM, rolling vs aggressive vs complete-sets",
        "seed 001 (IRIS) Fig. 5",
    ),
    Experiment(
        "hetero",
        "hetero_perf.py",
        "Heterogeneous perf/$: Cassandra and Redis, VM catalog, complete-sets",
        "seed 002 (OptimusCloud) Fig. 8-12",
    ),
    Experiment(
        "noise",
        "noise_sensitivity.py",
        "Noise sensitivity: forecast, phase duration, throughput predictor",
        "seed 001 Fig. 7-8, seed 002 Fig. 14",
    ),
    Experiment(
        "forecast_accuracy",
        "forecast_accuracy.py",
        "Forecast accuracy per horizon",
        "seed 001 (IRIS) Table 1",
        extra=("--jobs", "1"),
    ),
    Experiment(
        "tactic_decision",
        "tactic_decision.py",
        "Tactic advisor: decision time, accuracy, online learning after drift",
        "seed 000 (PaSTA)",
    ),
    Experiment(
        "tuning_gain",
        "tuning_gain.py",
        "Real tuning gain: default vs racing vs surrogate + GA, YCSB A and E",
        "seed 004 (irace)",
        needs=BENCH_NODE,
        outputs=False,
    ),
    Experiment(
        "rolling_availability",
        "rolling_availability.py",
        "Availability during a rolling reconfiguration",
        "seed 001 section 4.5, seed 002 complete-sets",
        short=(),
        needs="the lab's Cassandra and Redis clusters (make lab)",
        outputs=False,
    ),
    Experiment(
        "surrogate_accuracy",
        "surrogate_accuracy.py",
        "Throughput surrogate R^2 / RMSE on held-out configurations",
        "seed 002 (OptimusCloud) R^2 0.91",
        short=(),
        needs="the bench training dataset .lab/bench/datasets/cassandra-surrogate.jsonl (ansible-playbook -i "
        "inventories/bench playbooks/lab_up.yml, then ansible-playbook -i inventories/bench "
        "playbooks/collect_training.yml)",
    ),
    Experiment(
        "resource_accuracy",
        "resource_accuracy.py",
        "Resource usage per key distribution",
        "seed 003 (Cruz et al.) Table 4",
        needs="the bench Cassandra node and its calibrated resource model (ansible-playbook -i inventories/bench "
        "playbooks/lab_up.yml, then ansible-playbook -i inventories/bench playbooks/calibrate.yml)",
    ),
    Experiment(
        "observe_accuracy",
        "observe_accuracy.py",
        "Observe accuracy: what the load driver did against what observe saw",
        "seed 000 monitoring features",
        short=("--workloads", "a", "c"),
        needs="the lab's Cassandra and Redis clusters (make lab)",
        outputs=False,
    ),
    Experiment(
        "tactic_bootstrap",
        "tactic_bootstrap.py",
        "Tactic runs on a real node (the advisor's bootstrap)",
        "seed 000 (PaSTA) 4.1",
        needs=BENCH_NODE,
        outputs=False,
    ),
)
BY_NAME = {e.name: e for e in EXPERIMENTS}


def skip_line(experiment):
    return "skipped: needs %s; rerun with --with-servers once it is up" % experiment.needs


def command(experiment, short, out_dir, lab_model=True):
    """The argument list that runs one experiment, writing its table and CSV into out_dir when it can."""
    args = [sys.executable, os.path.join("benchmarks", experiment.script)]
    args += list(experiment.short if short else experiment.full)
    args += list(experiment.extra)
    if experiment.name == "dynamic" and not lab_model:
        args += ["--model", os.path.join("catalog", "models", "cassandra-lab.json")]
    if experiment.outputs:
        args += ["--markdown", os.path.join(out_dir, experiment.name + ".md")]
        args += ["--csv", os.path.join(out_dir, experiment.name + ".csv")]
    if experiment.name == "tactic_bootstrap":
        args += ["--out", os.path.join(out_dir, "tactic_bootstrap.jsonl")]
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
        "- date: %s (UTC), total wall time %.1f min" % (info["date"], info["wall_s"] / 60.0),
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
        "| experiment | paper | status | wall time | files |",
        "|---|---|---|---|---|",
    ]
    for record in records:
        experiment = BY_NAME[record["name"]]
        files = [
            f for f in (record["name"] + ".md", record["name"] + ".csv") if os.path.exists(os.path.join(out_dir, f))
        ]
        files += record.get("plots") or []
        lines.append(
            "| %s | %s | %s | %s | %s |"
            % (
                experiment.name,
                experiment.paper,
                record["status"],
                "-" if record.get("wall_s") is None else "%.0f s" % record["wall_s"],
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
    parser.add_argument("--with-servers", action="store_true", help="also run the experiments that need servers")
    parser.add_argument(
        "--no-lab-model",
        action="store_true",
        help="use only what the repository ships, as a fresh clone would: its surrogate catalog/models/"
        "cassandra-lab.json instead of the bench's .lab/bench/models/cassandra-surrogate.json",
    )
    parser.add_argument("--timeout", type=float, help="stop an experiment after this many seconds")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    args = parser.parse_args(argv)
    if args.list:
        for e in EXPERIMENTS:
            print("%-22s %-40s %s" % (e.name, e.paper, "needs " + e.needs if e.server else "simulation, no server"))
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
    print("results in %s" % os.path.relpath(out_dir, ROOT))
    started = time.monotonic()
    records = []
    for experiment in EXPERIMENTS:
        if args.only and experiment.name not in args.only:
            continue
        if experiment.server and not args.with_servers:
            line = skip_line(experiment)
            print("%s: %s" % (experiment.name, line))
            records.append(dict(name=experiment.name, status=line, wall_s=None))
            continue
        lab_model = not args.no_lab_model
        print("%s: %s" % (experiment.name, shown(command(experiment, args.short, out_dir, lab_model))), flush=True)
        record = run_one(experiment, args.short, out_dir, args.timeout, lab_model)
        print("%s: %s in %.1f s" % (experiment.name, record["status"], record["wall_s"]), flush=True)
        records.append(record)
    info["wall_s"] = time.monotonic() - started
    path = summary(records, info, out_dir)
    print("wrote %s (total %.1f min)" % (os.path.relpath(path, ROOT), info["wall_s"] / 60.0))
    return 1 if any(r["status"].startswith("failed") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
