# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The original irace (the R package; Debian's r-cran-irace) as a backend of a race (seed 004).

The race's scenario - its tuned parameters and ranges, its instances (workload, seed), its budget in evaluations or
seconds, first_test / each_test, the seed and the default configuration seeded in - is written as irace's own
files (parameters.txt, instances.txt, configurations.txt, scenario.txt) and a target runner. irace samples,
races with the Friedman test and resamples; for each evaluation it calls the target runner, which writes a request
(configuration, instance index) and runs the evaluation command (for a node: playbooks/tune.yml with
tactician_race_request, which applies the configuration, reloads the data, runs the instance cold and records the
result in the race's trial history, as the built-in racer does). The runner reads the result back from the
history and gives irace the cost (minus ops/s, irace minimizes) and, with a time budget, the seconds it took.

The trial history is the same JSON-lines file as the built-in racer's, so the runs of either backend train
surrogates; irace's own state (irace.Rdata) and output (irace.log) stay in the scenario directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.planning import racing

RUNNER = r"""#!{python}
# Target runner written by tactician.nosql for irace: CONFIG_ID INSTANCE_ID SEED INSTANCE BOUND? --name=value ...
import json, os, subprocess, sys, time

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.json"), encoding="utf-8") as handle:
    setup = json.load(handle)
args = sys.argv[1:]
config_id, instance_id, _seed, instance = args[:4]
config = dict(setup["fixed"])
for arg in args[4:]:
    if not arg.startswith("--") or "=" not in arg:
        continue
    name, text = arg[2:].split("=", 1)
    kind = setup["types"].get(name)
    if kind == "i":
        config[name] = int(round(float(text)))
    elif kind == "r":
        config[name] = float(text)
    elif kind == "b":
        config[name] = text == "true"
    else:
        config[name] = text
index = int(instance_id) - 1


def recorded():
    # The history's result of this configuration on this instance (a rerun of irace reuses it).
    found = None
    if os.path.exists(setup["history"]):
        with open(setup["history"], encoding="utf-8") as handle:
            for line in handle:
                item = json.loads(line) if line.strip() else {{}}
                if item.get("instance") == index and item.get("config") and all(
                    item["config"].get(k) == v for k, v in config.items()
                ):
                    found = item
    return found


def answer(item, elapsed):
    value = -float(item["value"])
    print(("%r %r" % (value, elapsed)) if setup["time_budget"] else repr(value))


known = recorded()
if known is not None:
    answer(known, float(known.get("elapsed_s") or 0.0))
    sys.exit(0)
request = os.path.join(setup["directory"], "request-%s-%d.json" % (config_id, index))
with open(request, "w", encoding="utf-8") as handle:
    json.dump({{"config": config, "index": index, "instance": int(os.path.basename(instance))}}, handle)
started = time.monotonic()
command = [part.replace("{{request}}", request) for part in setup["command"]]
if command == setup["command"]:
    command.append(request)
# R puts its own library path first; the evaluation runs with the library path it was written with.
env = dict(os.environ)
for name, value in setup["environment"].items():
    if value is None:
        env.pop(name, None)
    else:
        env[name] = value
done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
elapsed = time.monotonic() - started
if done.returncode != 0:
    log = os.path.join(setup["directory"], "evaluation-%s-%d.log" % (config_id, index))
    with open(log, "wb") as handle:
        handle.write(done.stdout)
    sys.stdout.write("evaluation failed (exit %d), its output in %s\n" % (done.returncode, log))
    sys.exit(1)
known = recorded()
if known is None:
    sys.stdout.write("no result of configuration %s on instance %d in %s\n" % (config_id, index, setup["history"]))
    sys.exit(1)
os.remove(request)
answer(known, elapsed)
"""


class IraceError(PlanningError, ValueError):
    """irace is missing or failed; the message says what to do."""


def version():
    """The installed irace's version, or None (no Rscript, or no irace package)."""
    if not shutil.which("Rscript"):
        return None
    try:
        done = subprocess.run(
            ["Rscript", "--vanilla", "-e", 'cat(as.character(packageVersion("irace")))'],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _kind(race, name):
    kind = race.space.kind(name)
    values = race.space.range(name)
    if kind == "bool":
        return "b", "c", '("true", "false")'
    if kind == "enum":
        return "c", "c", "(%s)" % ", ".join('"%s"' % v for v in values)
    low, high = values
    if kind == "float" or not (float(low).is_integer() and float(high).is_integer()):
        return "r", "r", "(%s, %s)" % (float(low), float(high))
    return "i", "i", "(%d, %d)" % (int(low), int(high))


def _typed(kind, text):
    """A value as irace prints it, in the parameter's type (the target runner does the same)."""
    if kind == "i":
        return int(round(float(text)))
    if kind == "r":
        return float(text)
    if kind == "b":
        return text == "true"
    return text


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_scenario(race, directory, command, history, budget_evaluations=None, budget_s=None):
    """Write irace's files for race into directory. command: the evaluation command (argv list) the target
    runner calls with a request file, whose path replaces "{request}" in the arguments (else comes last).
    Returns the paths {scenario, parameters, instances, configurations, runner}."""
    if not isinstance(command, (list, tuple)) or not command or not all(isinstance(c, str) for c in command):
        raise IraceError("evaluate_command: expected the evaluation command as a non-empty list of strings")
    if budget_evaluations is None and budget_s is None:
        raise IraceError("budget: give budget_evaluations or budget_s")
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    types = {}
    lines = ["# name  switch  type  range  (written from the race's parameters and ranges)"]
    for name in race.free:
        tag, kind, domain = _kind(race, name)
        types[name] = tag
        lines.append('%s "--%s=" %s %s' % (name, name, kind, domain))
    paths = {name: os.path.join(directory, name + ".txt") for name in ("parameters", "instances", "configurations")}
    paths["scenario"] = os.path.join(directory, "scenario.txt")
    paths["runner"] = os.path.join(directory, "target-runner")
    with open(paths["parameters"], "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(paths["instances"], "w", encoding="utf-8") as handle:
        handle.write("".join("%d\n" % index for index in range(len(race.instances))))
    with open(paths["configurations"], "w", encoding="utf-8") as handle:
        handle.write(" ".join(race.free) + "\n")
        for config in race.initial:
            handle.write(" ".join('"%s"' % _text(config[name]) for name in race.free) + "\n")
    scenario = {
        "parameterFile": paths["parameters"],
        "trainInstancesDir": "",
        "trainInstancesFile": paths["instances"],
        "configurationsFile": paths["configurations"] if race.initial else "",
        "targetRunner": paths["runner"],
        "execDir": directory,
        "logFile": os.path.join(directory, "irace.Rdata"),
        "sampleInstances": 0,
        "deterministic": 0,
        "firstTest": max(race.each_test, race.first_test - race.first_test % race.each_test),
        "eachTest": race.each_test,
        "seed": race.seed,
        "testType": "F-test",
        "parallel": 0,
        "digits": 4,
    }
    if budget_evaluations is not None:
        scenario["maxExperiments"] = int(budget_evaluations)
    else:
        scenario["maxTime"] = float(budget_s)
    with open(paths["scenario"], "w", encoding="utf-8") as handle:
        for key, value in scenario.items():
            handle.write("%s = %s\n" % (key, json.dumps(value) if isinstance(value, str) else value))
    setup = {
        "directory": directory,
        "command": list(command),
        "history": os.path.abspath(history),
        "types": types,
        "fixed": dict(race.fixed),
        "time_budget": budget_evaluations is None,
        "environment": {"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH")},
    }
    with open(os.path.join(directory, "runner.json"), "w", encoding="utf-8") as handle:
        json.dump(setup, handle, indent=1, sort_keys=True)
    with open(paths["runner"], "w", encoding="utf-8") as handle:
        handle.write(RUNNER.format(python=sys.executable))
    os.chmod(paths["runner"], 0o755)
    return paths


def command_line(scenario):
    """irace's command line for a scenario file (what the irace executable of the package runs)."""
    return ["Rscript", "--vanilla", "--slave", "-e", "library(irace);irace.cmdline()", "-s", scenario]


def parse_elites(text, race):
    """The elite configurations irace prints last, best first ([config]), from its output."""
    marker = "# Best configurations as commandlines"
    if marker not in text:
        raise IraceError("irace's output has no best configurations; see irace.log in the scenario directory")
    lines = text.split(marker, 1)[1].splitlines()[1:]
    elites = []
    types = {name: _kind(race, name)[0] for name in race.free}
    for line in lines:
        parts = line.split()
        if not parts or not parts[0].isdigit():
            break
        config = dict(race.fixed)
        for part in parts[1:]:
            if part.startswith("--") and "=" in part:
                name, text_value = part[2:].split("=", 1)
                config[name] = _typed(types.get(name), text_value.strip('"'))
        elites.append({"id": int(parts[0]), "config": config})
    if not elites:
        raise IraceError("irace's output lists no elite configuration")
    return elites


def run(race, directory, command, history, budget_evaluations=None, budget_s=None, timeout=None):
    """Run irace on the race's scenario; every evaluation goes through command and lands in history. Returns
    {"elites", "best", "evaluations", "configurations", "irace_version", "log"}."""
    found = version()
    if not found:
        raise IraceError(
            "backend irace: Rscript with the irace package is not installed (Debian: apt-get install "
            "--no-install-recommends r-cran-irace); use the built-in racer (backend race)"
        )
    paths = write_scenario(race, directory, command, history, budget_evaluations, budget_s)
    log = os.path.join(os.path.abspath(directory), "irace.log")
    with open(log, "w", encoding="utf-8") as out:
        done = subprocess.run(
            command_line(paths["scenario"]),
            cwd=os.path.abspath(directory),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    with open(log, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if done.returncode != 0:
        if "Error: == irace ==" in text:
            error = text.split("Error: == irace ==", 1)[1].split("This is not a bug in irace", 1)[0]
            error = error.replace("Execution halted", "")
            raise IraceError("irace: %s (irace.log in %s)" % (error.strip()[:2000], os.path.abspath(directory)))
        raise IraceError("irace failed (exit %d); the end of irace.log:\n%s" % (done.returncode, text[-2500:]))
    elites = parse_elites(text, race)
    trials = racing.TrialHistory(history).trials
    means = {}
    for trial in trials:
        means.setdefault(trial["config_key"], []).append(float(trial["value"]))
    best = dict(elites[0])
    key = next(
        (k for k in means if all(json.loads(k).get(n) == v for n, v in best["config"].items())),
        None,
    )
    if key is not None:
        best.update(mean=sum(means[key]) / len(means[key]), instances=len(means[key]))
    return {
        "elites": elites,
        "best": best,
        "evaluations": len(trials),
        "configurations": len(means),
        "irace_version": found,
        "log": log,
    }
