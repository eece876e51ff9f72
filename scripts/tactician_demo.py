"""The demo behind the README's main command: a phase-changing workload on the lab, autotune planning and applying.

  scripts/demo.sh                      # sets up, brings the lab up, runs this, stops the lab
  .venv/bin/python scripts/tactician_demo.py --phase-s 240   # on a lab that is already up

The workload runs read-heavy, then write-heavy (an upload of new records), then read-heavy (a known job schedule,
closed-loop clients). At the start of each phase autotune runs once in mode auto: it observes the phase, forecasts
the rest of the run from the schedule, plans with the lab's throughput surrogate and applies the first switch when
it pays off over the lookahead. The summary compares per phase what the plan predicted with what was measured:
ops/s before and after each roll (the server's counters), the phase's average (the clients), and the client
operations that failed during each roll.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects, plan_file
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

LAB = os.path.join(ROOT, ".lab")
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
# The write-heavy phase is an upload, the first phase of seed 001's HPC jobs: new records only. (With reads in it,
# a read at CL ONE may reach a replica the acknowledged insert has not reached yet: a read that finds no row,
# counted apart from the failed operations.)
PHASES = [
    ("read-heavy", {"read": 0.95, "update": 0.05}),
    ("write-heavy (upload)", {"insert": 1.0}),
    ("read-heavy again", {"read": 0.95, "update": 0.05}),
]


DEFAULT_PHASE_S = (150.0, 330.0, 280.0)
STEP_S = 30
"""autotune's decision step (tactician_autotune_step_s): a switch planned within it is due now."""


def phase_lengths(text):
    """--phase-s: 300 or 150,330,240 -> a length per phase."""
    try:
        values = [float(part) for part in str(text).split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give seconds: one number or %d separated by commas" % len(PHASES)) from None
    if len(values) == 1:
        values *= len(PHASES)
    if len(values) != len(PHASES) or min(values) < 60:
        raise argparse.ArgumentTypeError(
            "give one length for all phases or %d separated by commas, each at least 60 s (got %s)"
            % (len(PHASES), text)
        )
    return tuple(values)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="tactician-demo", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument(
        "--phase-s",
        type=phase_lengths,
        default=DEFAULT_PHASE_S,
        help="length of the phases in seconds: one number for all three, or three separated by commas (default "
        "%s: the upload is the longest, so that autotune's roll and both of its observe windows fit in it)"
        % ",".join("%g" % s for s in DEFAULT_PHASE_S),
    )
    parser.add_argument("--lead-s", type=float, default=20.0, help="load in a phase before autotune observes it")
    parser.add_argument(
        "--warmup-s", type=float, default=40.0, help="read-heavy load before the first phase (JIT of fresh nodes)"
    )
    parser.add_argument("--records", type=int, default=20000, help="YCSB records loaded (as the model was measured)")
    parser.add_argument("--threads", type=int, default=32, help="client threads (as the model was measured)")
    parser.add_argument("--model", default=os.path.join(ROOT, "catalog", "models", "cassandra-lab.json"))
    parser.add_argument("--min-gain", type=float, default=0.05, help="predicted gain share autotune needs to apply")
    parser.add_argument("--out", default=os.path.join(LAB, "demo"), help="where the demo writes (emptied first)")
    return parser.parse_args(argv)


def say(text):
    print("[demo +%s] %s" % (clock(time.time() - STARTED), text), flush=True)


def clock(seconds):
    minutes, secs = divmod(int(seconds), 60)
    return "%02d:%02d" % (minutes, secs)


STARTED = time.time()


def ansible(playbook, extra, log_path, show=("[tactician",)):
    """Runs a playbook of the collection on the lab inventory; prints its progress lines; the whole log to a file."""
    argv = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), os.path.join(ROOT, "playbooks", playbook)]
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


def _controller_priority():
    """The lab runs the controller on the machine the servers saturate: where allowed (root), the playbooks get a
    higher CPU priority than the servers and the clients, as a controller of its own would have."""
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
    for sub in ("plans", "reports", "logs"):
        os.makedirs(os.path.join(args.out, sub))
    history = os.path.join(args.out, "history.sqlite3")
    with open(os.path.join(LAB, "secrets", "cassandra-password"), encoding="utf-8") as handle:
        password = handle.readline().strip()

    say("back to the default configuration of the tuned parameters (%s)" % ", ".join(tuned))
    reset = write_json(
        os.path.join(args.out, "reset.json"), {"tactician_store": "cassandra", "tactician_settings": defaults}
    )
    if defaults and ansible("rolling_reconfigure.yml", reset, os.path.join(args.out, "logs", "reset.log")) != 0:
        sys.exit("the reset to the defaults failed; see %s" % os.path.join(args.out, "logs", "reset.log"))

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

    schedule_file = os.path.join(args.out, "schedule.yml")
    with open(schedule_file, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            {
                "version": 1,
                "seed": 1,
                "phases": [{"duration_s": args.warmup_s, "mix": PHASES[0][1], "rate": 0, "label": "warm-up"}]
                + [
                    {"duration_s": length, "mix": mix, "rate": 0, "label": label}
                    for (label, mix), length in zip(PHASES, args.phase_s, strict=True)
                ],
            },
            handle,
            sort_keys=False,
        )
    # The clients run niced in their own process: on a machine that also runs the servers and the controller,
    # autotune's own steps would otherwise wait behind 32 client threads.
    argv = ["nice", "-n", "10"] if shutil.which("nice") else []
    argv += [sys.executable, os.path.join(ROOT, "scripts", "tactician_load.py"), "--store", "cassandra"]
    argv += ["--hosts"] + HOSTS + ["--user", "tactician", "--workload", "a", "--phases", "run"]
    argv += ["-p", "recordcount=%d" % args.records, "-p", "requestdistribution=zipfian"]
    argv += ["--threads", str(args.threads), "--keyspace", "tactician_demo", "--replication-factor", "3"]
    argv += ["--schedule", schedule_file, "--json"]
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
    say(
        "workload started: %d s warm-up, then %s, closed loop, %d client threads"
        % (
            args.warmup_s,
            " -> ".join(
                "%s %d s" % (label, length) for (label, _mix), length in zip(PHASES, args.phase_s, strict=True)
            ),
            args.threads,
        )
    )
    total = args.warmup_s + sum(args.phase_s)
    runs = []
    for index, (label, _mix) in enumerate(PHASES):
        # A phase starts when the client of the one before ends (one client JVM per phase): follow them.
        while len(ended) <= index and driver.poll() is None:
            time.sleep(1)
        if len(ended) <= index:
            break
        time.sleep(max(0.0, ended[index] + args.lead_s - time.time()))
        remaining = max(args.phase_s[index] / 2, total - (time.time() - t0))
        extra = write_json(
            os.path.join(args.out, "autotune-%d.json" % (index + 1)),
            {
                "tactician_autotune_mode": "auto",
                "tactician_model_file": args.model,
                "tactician_history": history,
                "tactician_plans_dir": os.path.join(args.out, "plans"),
                "tactician_reports_dir": os.path.join(args.out, "reports"),
                "tactician_autotune_forecast": "schedule",
                "tactician_autotune_schedule_file": schedule_file,
                "tactician_autotune_schedule_start": t0,
                "tactician_autotune_demand": "unbounded",
                "tactician_autotune_workload_base": {
                    "requestdistribution": "zipfian",
                    "records": args.records,
                    "threads": args.threads,
                },
                "tactician_autotune_lookahead_s": int(remaining // STEP_S * STEP_S),
                "tactician_autotune_step_s": STEP_S,
                "tactician_autotune_observe_s": 20,
                "tactician_autotune_settle_s": 15,
                "tactician_autotune_restart_s": 60,
                "tactician_autotune_min_gain": args.min_gain,
                "tactician_autotune_keyspaces": ["tactician_demo"],
            },
        )
        say("phase %d (%s): autotune in mode auto" % (index + 1, label))
        began = time.time()
        rc = ansible("autotune.yml", extra, os.path.join(args.out, "logs", "autotune-%d.log" % (index + 1)))
        runs.append({"phase": index + 1, "label": label, "rc": rc, "began": began, "ended": time.time()})
        for line in decision_lines(args, history, began):
            say(line)
        if rc != 0:
            say("autotune failed (rc %d); see %s" % (rc, os.path.join(args.out, "logs")))
    rc_load = driver.wait()
    reader.join()
    text = "".join(output)
    with open(os.path.join(args.out, "logs", "clients.log"), "w", encoding="utf-8") as handle:
        handle.write(text)
    if "\n[" not in text:
        sys.exit("the workload failed (rc %d):\n%s" % (rc_load, text[-3000:]))
    outcome = {"results": json.loads(text[text.index("\n[") + 1 :])}
    results = [r for r in outcome.get("results") or [] if r.get("label") != "warm-up"]
    summary, roll_failed = summarize(args, history, results, runs, t0)
    path = os.path.join(args.out, "summary.md")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(summary)
    print()
    print(summary)
    print("Written: %s, reports in %s" % (path, os.path.join(args.out, "reports")))
    # What the demo promises: no client operation fails while a roll changes the nodes (a timeout elsewhere, on
    # two CPUs shared by 3 nodes, 32 client threads and the controller, is reported but is no roll's doing).
    ok = all(run["rc"] == 0 for run in runs) and roll_failed == 0
    return 0 if ok else 1


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


def decision_lines(args, history, since):
    """What the last autotune run decided (its plan's first step and reasons) and the effect it measured."""
    plans = [path for path in _plans(args) if os.path.getmtime(path) >= since - 1]
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
