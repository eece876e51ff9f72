"""The demo behind the README's main command: autotune on a phase-changing workload, side by side with doing nothing.

  scripts/demo.sh                      # sets up, brings the lab up, runs this, stops the lab
  .venv/bin/python scripts/tactician_demo.py --phase-s 240   # on a lab that is already up
  .venv/bin/python scripts/tactician_demo.py --arms autotune,static,none --repeats 3 --trace quiet   # make bench

The workload runs read-heavy, then write-heavy (an upload of new records), then read-heavy (a known job schedule,
closed-loop clients); trace "quiet" puts a quiet phase (reads at a low rate, a night) between the upload and the
reads. The same trace runs once per arm, the arms in turns, each from the same state (its starting configuration
rolled in, the rows reloaded): "none" keeps the default configuration and never tunes (doing nothing), "autotune"
starts on the defaults and runs autotune once at the start of each phase in mode auto (it observes the phase,
forecasts the rest of the run from the schedule, plans with the lab's throughput surrogate and applies the first
switch when it pays off over the lookahead), "static" keeps the static-optimized configuration of the whole trace
(the plan's own, taken from the first autotune run, or --static). The summary compares total client operations,
ops per phase and p99 of every arm with the client's and the servers' CPU, the ratio to doing nothing with a 95 %
confidence interval when there are repetitions, and the warm-up (the same configuration in every arm) as the
noise floor; then what autotune decided, predicted and measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.tactician.nosql.plugins.module_utils.core import process
from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects, plan_file
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

LAB = os.path.join(ROOT, ".lab")
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
READ_HEAVY = {"read": 0.95, "update": 0.05}
# The write-heavy phase is an upload, the first phase of seed 001's HPC jobs: new records only. (With reads in it,
# a read at CL ONE may reach a replica the acknowledged insert has not reached yet: a read that finds no row,
# counted apart from the failed operations.)
UPLOAD = {"insert": 1.0}
QUIET_RATE = 800.0
"""ops/s the clients offer in the quiet phase (a night): about a sixth of what the lab serves read-heavy."""
TRACES = {
    # name: ([(label, mix, rate ops/s or 0 for closed loop)], default seconds per phase)
    "demo": (
        [("read-heavy", READ_HEAVY, 0.0), ("write-heavy (upload)", UPLOAD, 0.0), ("read-heavy again", READ_HEAVY, 0.0)],
        (80.0, 210.0, 160.0),
    ),
    "quiet": (
        [
            ("read-heavy", READ_HEAVY, 0.0),
            ("write-heavy (upload)", UPLOAD, 0.0),
            ("quiet reads (a night)", READ_HEAVY, QUIET_RATE),
            ("read-heavy again", READ_HEAVY, 0.0),
        ],
        (100.0, 240.0, 240.0, 150.0),
    ),
}
ARMS = {
    "none": "doing nothing (the defaults in place, never tuned)",
    "static": "static-optimized (one configuration for the whole trace)",
    "autotune": "autotune (mode auto at the start of each phase)",
}
STEP_S = 30
"""autotune's decision step (tactician_autotune_step_s): a switch planned within it is due now."""


def phase_lengths(text, count):
    """--phase-s: 300 or 100,240,200 -> a length per phase."""
    try:
        values = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give seconds: one number or %d separated by commas" % count) from None
    if len(values) == 1:
        values *= count
    if len(values) != count or min(values) < 60:
        raise argparse.ArgumentTypeError(
            "give one length for all phases or %d separated by commas, each at least 60 s (got %s)" % (count, text)
        )
    return tuple(values)


def arm_list(text):
    """--arms: none,autotune -> ["none", "autotune"]."""
    arms = [part.strip() for part in str(text).split(",") if part.strip()]
    unknown = sorted(set(arms) - set(ARMS))
    if not arms or unknown or len(set(arms)) != len(arms):
        raise argparse.ArgumentTypeError(
            "give distinct arms from %s separated by commas (got %s)" % (", ".join(ARMS), text)
        )
    return arms


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="tactician-demo", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--trace", choices=sorted(TRACES), default="demo", help="the workload (default demo)")
    parser.add_argument(
        "--phase-s",
        default=None,
        help="length of the phases in seconds: one number for all, or one per phase separated by commas (default "
        + "; ".join("%s %s" % (name, ",".join("%g" % s for s in TRACES[name][1])) for name in sorted(TRACES))
        + ": the upload is the longest, so that autotune's roll and both of its observe windows fit in it)",
    )
    parser.add_argument(
        "--arms",
        type=arm_list,
        default=["none", "autotune"],
        help="arms side by side, in turns: none (doing nothing), static (static-optimized), autotune "
        "(default none,autotune)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="turns of every arm (3 or more: a 95 %% interval)")
    parser.add_argument(
        "--static", default=None, help="the static-optimized configuration (JSON); default the first plan's own"
    )
    parser.add_argument("--lead-s", type=float, default=20.0, help="load in a phase before autotune observes it")
    parser.add_argument(
        "--warmup-s",
        type=float,
        default=30.0,
        help="read-heavy load before the first phase of every arm, measured: the same configuration and load in "
        "every arm, so its ratio is the noise floor",
    )
    parser.add_argument(
        "--prewarm-s",
        type=float,
        default=160.0,
        help="at most this long, read-heavy load before the first turn, not measured, until two rounds of 40 s agree "
        "within 5 %%: fresh JVMs need minutes of load before their throughput is steady, and the first arm would pay "
        "for it alone",
    )
    parser.add_argument("--records", type=int, default=20000, help="YCSB records loaded (as the model was measured)")
    parser.add_argument("--threads", type=int, default=32, help="client threads (as the model was measured)")
    parser.add_argument("--model", default=os.path.join(ROOT, "catalog", "models", "cassandra-lab.json"))
    parser.add_argument("--min-gain", type=float, default=0.05, help="predicted gain share autotune needs to apply")
    parser.add_argument("--out", default=os.path.join(LAB, "demo"), help="where the demo writes (emptied first)")
    parser.add_argument(
        "--no-cpu-split",
        dest="cpu_split",
        action="store_false",
        help="run the clients and the controller on every CPU, with the servers (default: the servers on the upper "
        "half of the CPUs, the clients and the controller on the lower half, as on a real cluster)",
    )
    args = parser.parse_args(argv)
    # Absolute: the playbooks' modules run in a directory of their own.
    args.out = os.path.abspath(args.out)
    args.model = os.path.abspath(args.model)
    phases, lengths = TRACES[args.trace]
    try:
        args.phase_s = phase_lengths(args.phase_s, len(phases)) if args.phase_s else lengths
        args.static = json.loads(args.static) if args.static else None
    except (argparse.ArgumentTypeError, ValueError) as exc:
        parser.error("--phase-s/--static: %s" % exc)
    if args.static is not None and not isinstance(args.static, dict):
        parser.error("--static: give a JSON mapping of parameter to value")
    if args.repeats < 1:
        parser.error("--repeats: give a whole number >= 1")
    if "static" in args.arms and args.static is None and "autotune" not in args.arms:
        parser.error("--static: arm static needs the configuration, or arm autotune to plan it")
    args.phases = phases
    return args


def say(text):
    print("[demo +%s] %s" % (clock(time.time() - STARTED), text), flush=True)


def clock(seconds):
    minutes, secs = divmod(int(seconds), 60)
    return "%02d:%02d" % (minutes, secs)


STARTED = time.time()


def ansible(playbook, extra, log_path, show=("[tactician",), inventory=None):
    """Runs a playbook of the collection on the lab inventory (or another); prints its progress lines; the whole log
    to a file."""
    argv = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), os.path.join(ROOT, "playbooks", playbook)]
    argv += ["-i", inventory] if inventory else []
    argv += ["-e", "@" + extra]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_controller_priority,
        )
        for line in proc.stdout:
            log.write(line)
            if line.lstrip().startswith(show):
                print("    " + line.rstrip(), flush=True)
        return proc.wait()


SPLIT = {"clients": None, "servers": None}
"""The CPUs of the clients and the controller, and of the servers, once split_cpus() has split them (None: all)."""


def split_cpus(enabled):
    """Puts this process (so the clients and the controller it starts) on the lower half of the CPUs and the
    running servers on the upper half (the lab's inventory starts them there, cassandra_node_cpus upper-half; a
    lab brought up before is moved live). Returns a line that says where everything runs."""
    clients, servers = process.cpu_split() if enabled else (None, None)
    if not clients:
        return "CPU split: none (%s): the servers, the clients and the controller share every CPU" % (
            "--no-cpu-split" if not enabled else "one CPU"
        )
    os.sched_setaffinity(0, clients)
    for pid_file in server_pid_files():
        pid = process.read_pid(pid_file)
        if process.pid_alive(pid):
            process.pin(pid, servers)
    SPLIT.update(clients=clients, servers=servers)
    return "CPU split: the servers on CPU %s, the clients and the controller on CPU %s" % (
        process.format_cpus(servers),
        process.format_cpus(clients),
    )


def _controller_priority():
    """Without a CPU split the lab runs the controller on the CPUs the servers saturate: where allowed (root), the
    playbooks get a higher CPU priority than the servers and the clients, as a controller of its own would have.
    With the split it runs at the clients' priority, on their CPUs."""
    if SPLIT["clients"]:
        return
    try:
        os.nice(-10)
    except OSError:
        pass


def write_json(path, doc):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=2, sort_keys=True)
    return path


def main(argv=None):
    args = parse_args(argv)
    if not os.path.isfile(args.model):
        sys.exit("--model: no model file %s (the lab's throughput surrogate)" % args.model)
    with open(args.model, encoding="utf-8") as handle:
        model = json.load(handle)
    tuned = list((model.get("metadata") or {}).get("parameters") or [])
    catalog = {
        entry["name"]: entry
        for entry in ((model.get("model") or {}).get("space") or {}).get("catalog", {}).get("parameters", [])
    }
    defaults = {name: catalog[name]["default"] for name in tuned if catalog.get(name, {}).get("default") is not None}
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    with open(os.path.join(LAB, "secrets", "cassandra-password"), encoding="utf-8") as handle:
        password = handle.readline().strip()
    schedule_file = write_schedule(args)
    say(split_cpus(args.cpu_split))
    static = {n: v for n, v in args.static.items() if n in tuned} if args.static else None
    turns = arm_turns(args.arms, args.repeats, static_known=static is not None)
    say(
        "%s trace (%s), arms %s, %d turn%s each, in turns: %s"
        % (
            args.trace,
            " -> ".join(
                "%s %d s" % (label, length) for (label, _m, _r), length in zip(args.phases, args.phase_s, strict=True)
            ),
            ", ".join(args.arms),
            args.repeats,
            "" if args.repeats == 1 else "s",
            ", ".join("%s %d" % (arm, rep + 1) for rep, arm in turns),
        )
    )
    outcomes = []
    for number, (rep, arm) in enumerate(turns):
        say("=== turn %d of %d: %s (%s), repetition %d ===" % (number + 1, len(turns), arm, ARMS[arm], rep + 1))
        folder = os.path.join(args.out, "%s-%d" % (arm, rep + 1))
        for sub in ("plans", "reports", "logs"):
            os.makedirs(os.path.join(folder, sub))
        start = static if arm == "static" else defaults
        say("rolling in the arm's starting configuration %s" % json.dumps(start, sort_keys=True))
        reset = write_json(
            os.path.join(folder, "reset.json"), {"tactician_store": "cassandra", "tactician_settings": start}
        )
        if start and ansible("rolling_reconfigure.yml", reset, os.path.join(folder, "logs", "reset.log")) != 0:
            sys.exit("the reset to %s failed; see %s" % (start, os.path.join(folder, "logs", "reset.log")))
        prewarm_s = args.prewarm_s if number == 0 else 0.0
        outcome = run_arm(args, arm, rep, folder, password, schedule_file, prewarm_s=prewarm_s)
        outcomes.append(outcome)
        if arm == "autotune" and static is None and outcome.get("static"):
            static = {n: v for n, v in outcome["static"].items() if n in tuned}
            say("static-optimized configuration of the whole trace (the first plan's): %s" % json.dumps(static))
    summary = compare(args, outcomes, static)
    for outcome in outcomes:
        if outcome.get("detail"):
            detail = outcome["detail"]
            detail = detail[detail.index("## What") :].replace("\n## ", "\n### ")
            summary += "\n## autotune, turn %d\n\n#%s" % (outcome["rep"] + 1, detail)
    path = os.path.join(args.out, "summary.md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(summary)
    print()
    print(summary)
    print("Written: %s (each arm's plans, reports and logs in its own folder there)" % path)
    # What the demo promises: no client operation fails while a roll changes the nodes (a timeout elsewhere, on
    # two CPUs shared by 3 nodes, 32 client threads and the controller, is reported but is no roll's doing).
    ok = all(o["ok"] for o in outcomes)
    return 0 if ok else 1


def arm_turns(arms, repeats, static_known=True):
    """[(repetition, arm)]: every arm once per repetition, the order rotated each repetition (so that no arm always
    runs first); arm static waits for a plan of autotune's in the first repetition when its configuration is not
    given."""
    out = []
    for rep in range(repeats):
        order = arms[rep % len(arms) :] + arms[: rep % len(arms)]
        if rep == 0 and not static_known and "static" in order and "autotune" in order:
            order.remove("autotune")
            order.insert(order.index("static"), "autotune")
        out += [(rep, arm) for arm in order]
    return out


def write_schedule(args):
    path = os.path.join(args.out, "schedule.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            {
                "version": 1,
                "seed": 1,
                "phases": [{"duration_s": args.warmup_s, "mix": READ_HEAVY, "rate": 0, "label": "warm-up"}]
                + [
                    {"duration_s": length, "mix": mix, "rate": rate, "label": label}
                    for (label, mix, rate), length in zip(args.phases, args.phase_s, strict=True)
                ],
            },
            handle,
            sort_keys=False,
        )
    return path


def server_pid_files():
    folder = os.path.join(LAB, "cassandra")
    if not os.path.isdir(folder):
        return []
    return sorted(
        os.path.join(folder, name, "cassandra.pid")
        for name in os.listdir(folder)
        if os.path.isfile(os.path.join(folder, name, "cassandra.pid"))
    )


def client_argv(args, schedule_file):
    """The clients' command line on a schedule file. Without a CPU split they run niced: on the CPUs that also run
    the servers and the controller, autotune's own steps would otherwise wait behind 32 client threads."""
    argv = ["nice", "-n", "10"] if shutil.which("nice") and not SPLIT["clients"] else []
    argv += [sys.executable, os.path.join(ROOT, "scripts", "tactician_load.py"), "--store", "cassandra"]
    argv += ["--hosts"] + HOSTS + ["--user", "tactician", "--workload", "a", "--phases", "run"]
    argv += ["-p", "recordcount=%d" % args.records, "-p", "requestdistribution=zipfian"]
    argv += ["--threads", str(args.threads), "--keyspace", "tactician_demo", "--replication-factor", "3"]
    for pid_file in server_pid_files():
        argv += ["--server-pid-file", pid_file]
    return argv + ["--schedule", schedule_file, "--json"]


PREWARM_CHUNK_S = 40.0
"""Seconds of one pre-warm round; rounds go on until two in a row agree within PREWARM_STEADY."""
PREWARM_STEADY = 0.05


def prewarm(args, folder, password, seconds):
    """Read-heavy load in rounds of PREWARM_CHUNK_S, not measured, until the throughput of two rounds in a row
    agrees within 5 % or seconds have passed (the JIT of fresh nodes: with three nodes on one CPU it takes
    minutes). Returns the rounds' ops/s."""
    path = os.path.join(folder, "prewarm.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            {"version": 1, "seed": 1, "phases": [{"duration_s": PREWARM_CHUNK_S, "mix": READ_HEAVY, "rate": 0}]},
            handle,
        )
    say(
        "pre-warming the nodes: read-heavy load in rounds of %d s, not measured, until two agree within %d %% (at "
        "most %d s)" % (PREWARM_CHUNK_S, 100 * PREWARM_STEADY, seconds)
    )
    env = dict(os.environ, TACTICIAN_LOGIN_PASSWORD=password)
    rates = []
    with open(os.path.join(folder, "logs", "prewarm.log"), "w", encoding="utf-8") as log:
        while PREWARM_CHUNK_S * len(rates) < seconds:
            run = subprocess.run(
                client_argv(args, path), cwd=ROOT, env=env, capture_output=True, text=True, check=False
            )
            log.write(run.stdout + run.stderr)
            text = run.stdout
            try:
                rate = float(json.loads(text[text.index("\n[") + 1 :])[-1].get("throughput") or 0.0)
            except (ValueError, IndexError, AttributeError):
                break
            rates.append(rate)
            if len(rates) >= 2 and abs(rates[-1] - rates[-2]) <= PREWARM_STEADY * max(rates[-2], 1.0):
                break
    say("pre-warm rounds, ops/s: %s" % ", ".join("%.0f" % r for r in rates))
    return rates


def autotune_vars(args, folder, history, schedule_file, t0, remaining_s, rate, keyspace):
    """The extra variables of one autotune run in mode auto on a trace's known schedule (started at t0, remaining_s
    of it left), writing its plans and reports under folder; rate is the phase's offered ops/s (0: closed loop)."""
    return {
        "tactician_autotune_mode": "auto",
        "tactician_model_file": args.model,
        "tactician_history": history,
        "tactician_plans_dir": os.path.join(folder, "plans"),
        "tactician_reports_dir": os.path.join(folder, "reports"),
        "tactician_autotune_forecast": "schedule",
        "tactician_autotune_schedule_file": schedule_file,
        "tactician_autotune_schedule_start": t0,
        # The schedule's rates: a quiet phase offers less than the cluster can serve (closed-loop phases have none
        # and are unbounded).
        "tactician_autotune_demand": "forecast",
        "tactician_autotune_workload_base": {
            "requestdistribution": "zipfian",
            "records": args.records,
            "threads": args.threads,
        },
        "tactician_autotune_lookahead_s": int(remaining_s // STEP_S * STEP_S),
        "tactician_autotune_step_s": STEP_S,
        "tactician_autotune_observe_s": 20,
        # Two sub-windows of 10 s: the effect's interval with the least controller time per observation (each is a
        # module call, about 20 s on this loaded machine).
        "tactician_autotune_effect_windows": 2,
        "tactician_autotune_settle_s": 15,
        "tactician_autotune_restart_s": 60,
        "tactician_autotune_min_gain": args.min_gain,
        "tactician_autotune_keyspaces": [keyspace],
        # A throttled phase: a side that serves what the clients offer shows no effect ("throttled").
        **({"tactician_autotune_offered": rate} if rate else {}),
    }


def run_arm(args, arm, rep, folder, password, schedule_file, prewarm_s=0.0):
    """One arm's run of the whole trace: the rows reloaded, the clients on the schedule, autotune at each phase's
    start in arm autotune. Returns {"arm", "rep", "warmup", "results", "ok", "static", "detail"}."""
    params = loadrun.with_defaults(
        store="cassandra",
        hosts=HOSTS,
        login_user="tactician",
        login_password=password,
        properties={"recordcount": str(args.records), "requestdistribution": "zipfian"},
        phases=["load"],
        reload=True,
        threads=args.threads,
        keyspace="tactician_demo",
        replication_factor=3,
        # Every replica acknowledges every row: at ONE an overloaded replica may drop writes during the load,
        # and the clients' reads at ONE then miss rows (reads that find no row).
        consistency="ALL",
        driver_home=os.path.join(LAB, "load-driver"),
    )
    say("loading %d records into keyspace tactician_demo (RF 3)" % args.records)
    loadrun.execute(params, loadrun.plan(params))
    if prewarm_s > 0:
        prewarm(args, folder, password, prewarm_s)
    argv = client_argv(args, schedule_file)
    env = dict(os.environ, TACTICIAN_LOGIN_PASSWORD=password)
    ended, output = [], []
    t0 = time.time()
    driver = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def follow():
        for line in driver.stdout:
            output.append(line)
            if line.startswith("  phase "):
                ended.append(time.time())
                say("clients: %s" % line.strip())

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    say("workload started: %d s warm-up, then the trace; %d closed-loop client threads" % (args.warmup_s, args.threads))
    total = args.warmup_s + sum(args.phase_s)
    runs = []
    history = os.path.join(folder, "history.sqlite3")
    for index, (label, _mix, rate) in enumerate(args.phases if arm == "autotune" else []):
        # A phase starts when the client of the one before ends (one client JVM per phase): follow them.
        while len(ended) <= index and driver.poll() is None:
            time.sleep(1)
        if len(ended) <= index:
            break
        time.sleep(max(0.0, ended[index] + args.lead_s - time.time()))
        remaining = total - (time.time() - t0)
        if remaining < 2 * STEP_S:
            # The last autotune run outlasted the phases after it: a plan needs the schedule ahead of it.
            say(
                "phase %d (%s): %.0f s of the trace left, under two steps: autotune not run"
                % (index + 1, label, remaining)
            )
            break
        extra = write_json(
            os.path.join(folder, "autotune-%d.json" % (index + 1)),
            autotune_vars(args, folder, history, schedule_file, t0, remaining, rate, "tactician_demo"),
        )
        say("phase %d (%s): autotune in mode auto" % (index + 1, label))
        began = time.time()
        rc = ansible("autotune.yml", extra, os.path.join(folder, "logs", "autotune-%d.log" % (index + 1)))
        runs.append({"phase": index + 1, "label": label, "rc": rc, "began": began, "ended": time.time()})
        arm_args = argparse.Namespace(**dict(vars(args), out=folder))
        for line in decision_lines(arm_args, history, began):
            say(line)
        if rc != 0:
            say("autotune failed (rc %d); see %s" % (rc, os.path.join(folder, "logs")))
    rc_load = driver.wait()
    reader.join()
    text = "".join(output)
    with open(os.path.join(folder, "logs", "clients.log"), "w", encoding="utf-8") as handle:
        handle.write(text)
    if "\n[" not in text:
        sys.exit("the workload failed (rc %d):\n%s" % (rc_load, text[-3000:]))
    every = json.loads(text[text.index("\n[") + 1 :])
    warmup = next((r for r in every if r.get("label") == "warm-up"), None)
    results = [r for r in every if r.get("label") != "warm-up"]
    outcome = {"arm": arm, "rep": rep, "warmup": warmup, "results": results, "ok": True, "static": None}
    if arm == "autotune":
        arm_args = argparse.Namespace(**dict(vars(args), out=folder))
        detail, roll_failed = summarize(arm_args, history, results, runs, t0)
        plans = _plans(arm_args)
        outcome["static"] = _plan(plans[0]).get("static_optimized") if plans else None
        outcome["detail"] = detail
        outcome["roll_failed"] = roll_failed
        outcome["ok"] = all(run["rc"] == 0 for run in runs) and roll_failed == 0
    write_json(os.path.join(folder, "outcome.json"), {k: v for k, v in outcome.items() if k != "detail"})
    return outcome


def ops_of(result):
    """Client operations a phase completed (every kind)."""
    return sum(int(op.get("count") or 0) for op in (result or {}).get("operations", {}).values())


def p99_of(result):
    """The worst p99 (ms) of any operation of a phase."""
    values = [op.get("p99_ms") for op in (result or {}).get("operations", {}).values()]
    values = [float(v) for v in values if isinstance(v, int | float)]
    return max(values) if values else None


def cpu_of(results):
    """(client cores, servers' cores, other cores) used on average over the phases."""
    wall = sum(float(r.get("wall_s") or 0) for r in results) or 1.0

    def share(key):
        values = [r.get(key) for r in results]
        return None if any(v is None for v in values) else sum(float(v) for v in values) / wall

    return share("client_cpu_s"), share("server_cpu_s"), share("other_cpu_s")


def ratio_interval(pairs):
    """(mean ratio, low, high) of paired ratios: the geometric mean and the 95 % t interval of the log ratios
    (low and high None with a single pair)."""
    logs = [math.log(a / b) for a, b in pairs if a > 0 and b > 0]
    if not logs:
        return None, None, None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), None, None
    half = effects.t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def _interval(values):
    mean, low, high = values
    if mean is None:
        return "-"
    if low is None:
        return "%.3f (one pair: no interval)" % mean
    return "%.3f [%.3f, %.3f]" % (mean, low, high)


def _where():
    if not SPLIT["clients"]:
        return "servers, clients and controller on the same %d CPUs" % (os.cpu_count() or 1)
    return "the servers on CPU %s, the clients and the controller on CPU %s" % (
        process.format_cpus(SPLIT["servers"]),
        process.format_cpus(SPLIT["clients"]),
    )


def _cores(value):
    return "-" if value is None else "%.2f" % value


def compare(args, outcomes, static):
    """The Markdown comparison of the arms: every run, then each arm against doing nothing and the better
    baseline, paired by repetition, with the warm-up (the same configuration in every arm) as the noise floor."""
    labels = [label for label, _mix, _rate in args.phases]
    lines = ["# Demo: autotune side by side with doing nothing, on the same trace", ""]
    lines.append(
        "Lab: 3 Cassandra 5.0 nodes (RF 3, CL ONE), %s; %d records; %d "
        "closed-loop client threads; trace %s: %s after a %g s warm-up; model %s. Every arm starts from the same "
        "state: its configuration rolled in, the rows reloaded."
        % (
            _where(),
            args.records,
            args.threads,
            args.trace,
            " / ".join(
                "%s %g s%s" % (label, length, " at %g ops/s" % rate if rate else "")
                for (label, _mix, rate), length in zip(args.phases, args.phase_s, strict=True)
            ),
            args.warmup_s,
            os.path.basename(args.model),
        )
    )
    lines.append("")
    lines.append(
        "Arms: %s. Static-optimized: %s."
        % ("; ".join("%s = %s" % (arm, ARMS[arm]) for arm in args.arms), json.dumps(static) if static else "n/a")
    )
    lines += ["", "## Every run", ""]
    lines.append(
        "| arm | turn | total ops | "
        + " | ".join("%s ops/s" % label for label in labels)
        + " | worst p99 per phase (ms) | failed ops | warm-up ops/s | client CPU | servers CPU | other CPU |"
    )
    lines.append("|---" * (len(labels) + 9) + "|")
    for outcome in outcomes:
        results = outcome["results"]
        client, servers, other = cpu_of(results)
        lines.append(
            "| %s | %d | %s | %s | %s | %d | %s | %s | %s | %s |"
            % (
                outcome["arm"],
                outcome["rep"] + 1,
                f"{sum(ops_of(r) for r in results):,}",
                " | ".join("%.0f" % (r.get("throughput") or 0) for r in results),
                " / ".join("-" if p99_of(r) is None else "%.0f" % p99_of(r) for r in results),
                sum(int(r.get("failed_total") or 0) for r in results),
                "%.0f" % ((outcome["warmup"] or {}).get("throughput") or 0),
                _cores(client),
                _cores(servers),
                _cores(other),
            )
        )
    lines += [
        "",
        "CPU in cores (of the machine's %d) on average over the trace: the clients (all client JVMs), the three "
        "servers, and everything else (the controller's playbooks among it)." % (os.cpu_count() or 1),
    ]
    by = {}
    for outcome in outcomes:
        by.setdefault(outcome["arm"], {})[outcome["rep"]] = outcome
    baselines = [arm for arm in ("none", "static") if arm in by]
    contenders = [arm for arm in ("autotune", "static") if arm in by]
    mean_total = {
        arm: statistics.fmean(sum(ops_of(r) for r in o["results"]) for o in runs.values()) for arm, runs in by.items()
    }
    better = max(baselines, key=lambda arm: mean_total[arm]) if baselines else None
    rows = []
    for arm in contenders:
        for base in baselines:
            if base == arm:
                continue
            reps = sorted(set(by[arm]) & set(by[base]))
            total = ratio_interval(
                [
                    (sum(ops_of(r) for r in by[arm][k]["results"]), sum(ops_of(r) for r in by[base][k]["results"]))
                    for k in reps
                ]
            )
            floor = ratio_interval(
                [(ops_of(by[arm][k]["warmup"]), ops_of(by[base][k]["warmup"])) for k in reps if by[arm][k]["warmup"]]
            )
            phases = [
                ratio_interval([(ops_of(by[arm][k]["results"][i]), ops_of(by[base][k]["results"][i])) for k in reps])[0]
                for i in range(len(labels))
            ]
            rows.append((arm, base, len(reps), total, floor, phases))
    if rows:
        lines += ["", "## Side by side (paired by turn)", ""]
        lines.append(
            "| arm | against | pairs | total ops ratio, 95 %% CI | warm-up ratio (A/A: the same configuration) | %s |"
            % " | ".join("%s ratio" % label for label in labels)
        )
        lines.append("|---" * (len(labels) + 5) + "|")
        for arm, base, count, total, floor, phases in rows:
            lines.append(
                "| %s | %s%s | %d | %s | %s | %s |"
                % (
                    arm,
                    base,
                    " (the better baseline)" if base == better and len(baselines) > 1 else "",
                    count,
                    _interval(total),
                    _interval(floor),
                    " | ".join("-" if value is None else "%.3f" % value for value in phases),
                )
            )
        lines += [
            "",
            "A ratio is the arm's client operations over the baseline's in the same turn (geometric mean over the "
            "turns; the interval is Student's t on the log ratios). The warm-up runs the same configuration and "
            "load in both arms: its ratio is what chance alone does here. A gain inside it is no gain.",
        ]
    return "\n".join(lines) + "\n"


STATUS_INTERVAL_S = 10.0
"""The clients' status lines come every 10 s; a failure at time t shows in the first line at or after t."""


def roll_failures(record, results):
    """Operations of the clients' -FAILED series from the first observe window of an applied effect to the second:
    the health check, the roll and the settling between them."""
    windows = (record.get("measured") or {}).get("windows") or []
    if len(windows) < 2:
        return None
    first = float(windows[0].get("time") or 0)
    second = float(windows[1].get("time") or 0)
    return sum(
        int(count)
        for result in results
        for at, count in result.get("failed_at") or []
        if first <= float(at) <= second + STATUS_INTERVAL_S
    )


def _plans(args):
    folder = os.path.join(args.out, "plans")
    return sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if name.startswith("cassandra-2") and name.endswith(".yml")
    )


def decision_lines(args, history, since, until=None):
    """What the last autotune run decided (its plan's first step and reasons) and the effect it measured: the last
    plan written since that time (and until, when given: the run that ended then)."""
    plans = [
        path
        for path in _plans(args)
        if since - 1 <= os.path.getmtime(path) and (until is None or os.path.getmtime(path) <= until + 1)
    ]
    if not plans:
        return ["no plan written (see the log)"]
    plan = _plan(plans[-1])
    steps = plan.get("steps") or []
    lines = ["autotune: %s" % plan_file.gate(plan, "auto", args.min_gain, STEP_S)["reason"]]
    if steps:
        first = steps[0]
        predicted = first.get("predicted") or {}
        lines.append(
            "plan: switch at +%.0f s to %s, predicted %.0f -> %.0f ops/s, break-even %s s"
            % (
                first.get("offset_s") or 0,
                json.dumps(first.get("configuration"), sort_keys=True),
                predicted.get("ops_per_s_before") or 0,
                predicted.get("ops_per_s_after") or 0,
                predicted.get("break_even_s"),
            )
        )
    else:
        lines.append("plan: keep the configuration in place")
    lines += ["  why: %s" % reason for reason in plan.get("reasons") or []]
    store = history_store.open_history(history, create=False, readonly=True)
    try:
        records = [
            r
            for r in effects.effects(store, "cassandra")
            if (r.get("plan") or {}).get("created") == plan.get("created")
        ]
    finally:
        store.close()
    lines += ["effect: %s" % effects.summary(r) for r in records]
    return lines


def _plan(path):
    return plan_file.load_plan(path)


def decision(plan, applied, min_gain, step_s=STEP_S):
    """What autotune in mode auto decided on a plan and why not, in the words of the plan's gate (plan_file.gate,
    the rule autotune.yml applies)."""
    steps = plan.get("steps") or []
    due = plan_file.step_due_now(plan, step_s)
    if due is not None:
        what = "switch now to %s" % json.dumps(steps[due]["configuration"], sort_keys=True)
    elif steps:
        what = "switch in %.0f s" % steps[0]["offset_s"]
    else:
        what = "keep the configuration in place"
    if applied:
        return "%s; applied" % what
    gate = plan_file.gate(plan, "auto", min_gain, step_s)
    if gate["apply"]:
        return "%s; not applied although the gate decided to (%s): see the log" % (what, gate["reason"])
    return "%s; not applied: %s" % (what, gate["reason"])


def summarize(args, history, results, runs, t0):
    """The Markdown summary: decisions and reasons, predicted against measured per phase, failed operations."""
    store = history_store.open_history(history, create=False, readonly=True)
    try:
        records = effects.effects(store, "cassandra")
    finally:
        store.close()
    plans = _plans(args)
    lines = ["# Demo: autotune on a phase-changing workload", ""]
    lines.append(
        "Lab: 3 Cassandra 5.0 nodes (RF 3, CL ONE) on one machine; %d records; %d closed-loop client threads; "
        "phases of %s s; model %s."
        % (args.records, args.threads, " / ".join("%g" % s for s in args.phase_s), os.path.basename(args.model))
    )
    lines += ["", "## What autotune decided, and why", ""]
    for run, plan_path in zip(runs, plans, strict=False):
        plan = _plan(plan_path)
        applied = any((r.get("plan") or {}).get("created") == plan.get("created") and r.get("applied") for r in records)
        lines.append(
            "- phase %d (%s): %s. %s"
            % (run["phase"], run["label"], decision(plan, applied, args.min_gain), "; ".join(plan.get("reasons") or []))
        )
    lines += ["", "## Predicted against measured, per phase", ""]
    lines.append(
        "| phase | mix | predicted ops/s, configuration in place | measured ops/s (clients, whole phase) | failed ops "
        "| reads that found no row | roll | predicted before → after | measured before → after | gain predicted "
        "| gain measured |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    plan_docs = [_plan(path) for path in plans]
    for index, result in enumerate(results):
        run = runs[index] if index < len(runs) else None
        record = None
        if run:
            for candidate in records:
                window = (candidate.get("measured") or {}).get("windows") or []
                if window and run["began"] - 5 <= float(window[0].get("time") or 0) <= run["ended"] + 5:
                    record = candidate
        mix = (
            ", ".join("%s %.2f" % (op, share) for op, share in sorted(result.get("mix", {}).items()) if share)
            or "read ratio %.2f" % result["read_ratio"]
        )
        now = "-"
        if index < len(plan_docs):
            per_step = (plan_docs[index].get("predicted") or {}).get("ops_per_step") or []
            step_s = float((plan_docs[index].get("lookahead") or {}).get("step_s") or 30.0)
            first = (plan_docs[index].get("steps") or [{}])[0]
            if first.get("offset_s", 1) == 0:
                now = "%.0f" % ((first.get("predicted") or {}).get("ops_per_s_before") or 0)
            elif per_step:
                now = "%.0f" % (float(per_step[0]) / step_s)
        row = [
            str(index + 1),
            mix,
            now,
            "%.0f" % (result["throughput"] or 0),
            str(result["failed_total"]),
            str(result.get("not_found_total") or 0),
        ]
        if record and record.get("applied"):
            predicted, measured = record.get("predicted") or {}, record.get("measured") or {}
            row += [
                "yes: %s" % json.dumps(record.get("configuration"), sort_keys=True),
                "%.0f → %.0f" % (predicted.get("before") or 0, predicted.get("after") or 0),
                "%.0f → %.0f" % (measured.get("before") or 0, measured.get("after") or 0),
                _pct(predicted.get("gain")),
                _pct(measured.get("gain")),
            ]
        else:
            row += ["no", "-", "-", "-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    failed = sum(r["failed_total"] for r in results)
    missing = sum(r.get("not_found_total") or 0 for r in results)
    during = [(record, roll_failures(record, results)) for record in records if record.get("applied")]
    roll_failed = sum(count or 0 for _record, count in during)
    lines += [""]
    for record, count in during:
        lines.append(
            "Failed client operations during the roll to %s: %s (from the observe window before it to the one "
            "after, by the clients' 10 s status lines)."
            % (json.dumps(record.get("configuration"), sort_keys=True), "unknown" if count is None else count)
        )
    lines += [
        "Failed client operations: %d over the whole run (the rolls included)." % failed,
        "Reads that found no row: %d (at CL ONE a read may meet a replica a write has not reached yet: stale, "
        "not failed)." % missing,
        "Wall time of the workload and autotune: %s." % clock(time.time() - t0),
    ]
    for record in records:
        lines.append("- effect: %s" % effects.summary(record))
    return "\n".join(lines) + "\n", roll_failed


def _pct(value):
    return "-" if value is None else "%+.1f %%" % (100.0 * float(value))


if __name__ == "__main__":
    sys.exit(main())
