# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/run.py and benchmarks/_report.py: which experiments run or are skipped, the command lines, the
headline tables next to the papers' figures, the plots and summary.md, without running a benchmark."""

from __future__ import annotations

import csv
import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import _report
import run

SERVER = {
    "tuning_gain",
    "rolling_availability",
    "rolling_availability_quorum",
    "resource_accuracy",
    "observe_accuracy",
    "tactic_bootstrap",
}
SIMULATIONS = {"dynamic", "scale_out", "hetero", "noise", "forecast_accuracy", "tactic_decision", "surrogate_accuracy"}


def test_every_script_exists_and_server_experiments_say_what_they_need():
    names = {e.name for e in run.EXPERIMENTS}
    assert names >= SERVER | SIMULATIONS
    for experiment in run.EXPERIMENTS:
        assert os.path.exists(os.path.join(BENCHMARKS, experiment.script)), experiment.script
        if experiment.name in SERVER:
            line = run.skip_line(experiment)
            assert line.startswith("skipped: needs ") and "(" in line and ("make lab" in line or "playbooks/" in line)
        if experiment.name in SIMULATIONS:
            assert not experiment.server


def test_commands_write_into_the_results_folder_and_show_no_absolute_path(tmp_path):
    out = os.path.join(run.ROOT, "results", "x")
    args = run.command(run.BY_NAME["dynamic"], True, out)
    assert args[1] == os.path.join("benchmarks", "plan_dynamic.py") and "--short" in args
    assert args[args.index("--csv") + 1] == os.path.join(out, "dynamic.csv")
    text = run.shown(args)
    assert text.startswith(".venv/bin/python benchmarks/plan_dynamic.py --short")
    assert run.ROOT not in text and "results/x/dynamic.md" in text
    full = run.command(run.BY_NAME["forecast_accuracy"], False, out)
    assert "--short" not in full and full[full.index("--jobs") + 1] == "1"
    assert "--markdown" not in run.command(run.BY_NAME["tuning_gain"], True, out)
    fresh = run.command(run.BY_NAME["dynamic"], True, out, lab_model=False)
    assert fresh[fresh.index("--model") + 1] == os.path.join("catalog", "models", "cassandra-bench.json")


def test_servers_are_skipped_and_summary_is_written(tmp_path, capsys):
    code = run.main(["--short", "--only", "tuning_gain", "observe_accuracy", "--out", str(tmp_path)])
    assert code == 0
    text = (tmp_path / "summary.md").read_text()
    assert "skipped: needs the bench Cassandra node" in text and "make lab" in text
    assert "# Benchmark results (short)" in text and "machine: " in text and "command: `" in text
    assert "skipped: needs" in capsys.readouterr().out
    assert run.main(["--list"]) == 0


def test_every_server_experiment_has_a_site_and_sites_run_together():
    for experiment in run.EXPERIMENTS:
        assert (experiment.site in run.SITES) == experiment.server, experiment.name
    order = run.ordered(run.EXPERIMENTS)
    kinds = [e.site if e.server else None for e in order]
    assert kinds == sorted(kinds, key=([None] + list(run.SITES)).index)
    assert order[-1].name == "tuning_gain"
    full = run.command(run.BY_NAME["tuning_gain"], False, "out")
    assert full[full.index("--rounds") + 1] == "10" and full[full.index("--work-dir") + 1] == os.path.join(
        "out", "tuning_gain"
    )
    quorum = run.command(run.BY_NAME["rolling_availability_quorum"], False, "out")
    assert quorum[quorum.index("--cl") + 1] == "QUORUM"


def test_use_mode_skips_a_site_that_is_not_up(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "site_up", lambda site, timeout=2.0: False)
    called = []
    monkeypatch.setattr(run, "run_logged", lambda *a: called.append(a) or (True, 0.0))
    assert run.main(["--servers", "use", "--only", "observe_accuracy", "--out", str(tmp_path)]) == 0
    assert "skipped: the lab (3 Cassandra nodes, Redis cluster) is not up" in (tmp_path / "summary.md").read_text()
    assert called == []


def test_start_mode_brings_up_prepares_runs_and_stops_what_it_started(tmp_path, monkeypatch):
    up = {"lab": True, "bench": False}
    monkeypatch.setattr(run, "site_up", lambda site, timeout=2.0: up[site.name])
    playbooks = []

    def fake_run_logged(argv, log_path, label):
        playbooks.append(" ".join(argv[1:]))
        if argv[-1].endswith("lab_up.yml"):
            up["bench"] = True
        return True, 1.0

    monkeypatch.setattr(run, "run_logged", fake_run_logged)
    monkeypatch.setattr(
        run,
        "PREREQUISITES",
        {"resource_accuracy": [run.Prerequisite("no/such/model.json", "no/such/shipped.json", "calibrate.yml", "m")]},
    )
    ran = []
    monkeypatch.setattr(
        run, "run_one", lambda e, *a, **k: ran.append(e.name) or dict(name=e.name, status="ok", wall_s=1.0, command="x")
    )
    only = ["observe_accuracy", "resource_accuracy", "tactic_bootstrap", "dynamic"]
    assert run.main(["--servers", "start", "--only", *only, "--out", str(tmp_path)]) == 0
    assert ran == ["dynamic", "observe_accuracy", "resource_accuracy", "tactic_bootstrap"]
    bench = os.path.join("inventories", "bench")
    # The lab was up already: used and left up. The bench node was started, the model made, the node stopped.
    assert playbooks == [
        "-i %s %s" % (bench, os.path.join("playbooks", "lab_up.yml")),
        "-i %s %s" % (bench, os.path.join("playbooks", "calibrate.yml")),
        "-i %s %s" % (bench, os.path.join("playbooks", "lab_down.yml")),
    ]
    text = (tmp_path / "summary.md").read_text()
    assert "- servers: bring up the bench Cassandra node, ok" in text and "- servers: stop the bench" in text


def test_model_lines():
    log = "x\nmodel: lab surrogate a.json and the synthetic function\nthroughput: a field\n  model: not at start"
    assert run.model_lines(log) == ["model: lab surrogate a.json and the synthetic function"]


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return _report.read_csv(path)


DYNAMIC = [
    dict(
        workload="hpc-1 (synthetic)",
        default=100,
        static_optimized=110,
        naive=80,
        ours=121,
        ours_oracle=132,
        theoretical_best=140,
    )
]


def test_headlines_put_ours_next_to_the_paper(tmp_path):
    rows = _write(tmp_path / "d.csv", DYNAMIC)
    header, body = _report.headline_dynamic(rows)
    assert len(header) == len(body[0])
    assert body[0][1] == "+10.0 % / +20.0 %" and body[0][2].startswith("+18.9 %")
    assert body[0][3] == "0.864 / 0.943" and body[0][5] == "-20.0 %"
    hetero = _write(
        tmp_path / "h.csv",
        [
            dict(store="redis", trace="hpc-1", system="ours (oracle)", ratio_to_best=0.9, vs_static=0.043),
            dict(store="redis", trace="hpc-1", system="homogeneous-dynamic", ratio_to_best=0.7, vs_static=-0.1),
        ],
    )
    header, body = _report.headline_hetero(hetero)
    assert body[0][:2] == ["redis", "hpc-1"] and "+4.3 %" in body[0] and "+19 %" in body[0][-1]
    forecast = _write(
        tmp_path / "f.csv",
        [
            {"field": "read_ratio", "workload": "abrupt-slow", "method": "arima", "1 min": "0.9", "2 min": "0.8"}
            | {"5 min": "0.7", "15 min": "0.6", "lookahead_s": "300", "n": "61"},
            {"field": "throughput", "workload": "abrupt-slow", "method": "arima", "1 min": "1", "2 min": "1"}
            | {"5 min": "1", "15 min": "1", "lookahead_s": "900", "n": "61"},
        ],
    )
    _header, body = _report.headline_forecast(forecast)
    assert body == [["abrupt-slow", "arima", "90 / 80 / 70 / 60 %", "5 min", _report.PAPER_FORECAST["abrupt-slow"]]]
    assert _report.markdown_table(["a", "b"], [[1, 2]]) == ["| a | b |", "|---|---|", "| 1 | 2 |"]


def test_numbers_and_names():
    assert _report.number("") is None and _report.number("2.5") == 2.5
    assert _report.pct(0.1234) == "+12.3 %" and _report.pct(None) == "-"
    assert _report.over("110", "100") == pytest.approx(0.1) and _report.share("1", "0") is None
    assert _report.trace_of("hpc-5 (surrogate)") == ("hpc-5", "surrogate")


def test_a_plot_is_written(tmp_path):
    rows = _write(tmp_path / "d.csv", DYNAMIC)
    paths = _report.plot_dynamic(rows, str(tmp_path))
    assert paths and os.path.getsize(paths[0]) > 1000


def test_an_experiment_with_a_server_of_its_own_runs_only_with_servers_and_brings_nothing_up(tmp_path):
    redis = run.BY_NAME["redis_memory"]
    assert redis.server and run.SITES[redis.site].probe is None
    assert run.site_up(run.SITES[redis.site])
    assert run.skip_line(redis).startswith("skipped: needs redis-server")
    servers = run.Servers("use", str(tmp_path))
    assert servers.ready(run.SITES[redis.site]) is None and servers.started == []
    args = run.command(redis, True, str(tmp_path))
    assert "--short" in args and args[args.index("--markdown") + 1] == str(tmp_path / "redis_memory.md")
    # Right after the simulations, before any site is brought up.
    order = [e.name for e in run.ordered(run.EXPERIMENTS)]
    assert order.index("redis_memory") < min(order.index(e.name) for e in run.EXPERIMENTS if e.site == "lab")


def test_every_experiment_has_its_expected_time_and_the_run_says_how_long(monkeypatch):
    import dataclasses

    # Every experiment carries its figure at both sizes (a short one measured for each).
    assert all(len(e.minutes) == 2 and e.minutes[0] is not None for e in run.EXPERIMENTS)
    assert set(run.SITE_MINUTES) == set(run.SITES)
    monkeypatch.setattr(run, "SITE_MINUTES", dict(run.SITE_MINUTES, bench=1.5))
    monkeypatch.setattr(run, "site_up", lambda site, timeout=2.0: False)
    hetero = dataclasses.replace(run.BY_NAME["hetero"], minutes=(0.5, 2.0))
    knobs = dataclasses.replace(run.BY_NAME["knob_effects"], minutes=(9.0, None))
    chosen = [hetero, knobs]
    # Servers skipped: only the simulation counts.
    assert run.expected(chosen, True, "skip") == (0.5, [], 0.0)
    # Started: the bench node's bring-up counts once; a size with no figure is named, not guessed.
    assert run.expected(chosen, True, "start") == (11.0, [], 0.0)
    assert run.expected(chosen, False, "start") == (3.5, ["knob_effects"], 0.0)
    line = run.expected_line(chosen, False, "start")
    assert line.startswith("expected: about 4 min on 2 CPUs,") and "plus knob_effects, not measured" in line
    chosen = [dataclasses.replace(hetero, estimated_full=True), knobs]
    assert run.expected(chosen, False, "skip") == (2.0, [], 2.0)
    assert "(2 min of it from runs of a nearby size)" in run.expected_line(chosen, False, "skip")
    assert [run.duration_text(m) for m in (0.3, 45, 125)] == ["18 s", "45 min", "2 h 05 min"]


def test_a_stopped_rolls_lock_is_named_before_the_run_with_how_to_release_it(tmp_path):
    from ansible_collections.tactician.nosql.plugins.module_utils.apply import lock

    assert run.stopped_locks(lock_dir=str(tmp_path)) == []
    # A roll that gave its lock back, or one still running, is not a stopped roll: nothing to say.
    held = lock.RollingLock("redis", lock_dir=str(tmp_path), owner="someone")
    held.acquire(run_id="r1")
    assert run.stopped_locks(lock_dir=str(tmp_path)) == []
    stopped = lock.RollingLock("cassandra", lock_dir=str(tmp_path), owner="someone")
    stopped.acquire(run_id="r2")
    stopped.mark_stopped(run_id="r2", stopped={"node": "cassandra2", "reason": "127.0.0.1 went down."})
    (line,) = run.stopped_locks(lock_dir=str(tmp_path))
    assert "cluster cassandra" in line and "on cassandra2: 127.0.0.1 went down;" in line
    assert str(tmp_path / "cassandra.lock") in line
    assert "rolling_lock -a 'name=cassandra state=released force=true'" in line


@pytest.mark.parametrize("name", ["knob_effects", "shape_racing", "shape_tuning", "shape_dynamic", "redis_memory"])
def test_the_node_shape_experiments_arguments_parse_at_both_sizes(name, tmp_path):
    # A typo in an experiment's arguments would surface only hours into `make bench`.
    import importlib

    module = importlib.import_module(run.BY_NAME[name].script[: -len(".py")])
    for short in (True, False):
        argv = run.command(run.BY_NAME[name], short, str(tmp_path))
        script = next(i for i, part in enumerate(argv) if part.endswith(run.BY_NAME[name].script))
        args = argv[script + 1 :]
        assert module.parse_args(args) is not None, (name, short, args)
