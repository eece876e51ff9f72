# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Iterated racing (seed 004): the Friedman test and its post-hoc, the race on a simulated noisy store, and the
ask/tell protocol that lets a playbook drive it and resume it."""

from __future__ import annotations

import json
import random
import zlib

import pytest
from scipy import stats

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import FeatureSpace
from ansible_collections.tactician.nosql.plugins.module_utils.planning import racing

PARAMETERS = ["concurrent_writes", "concurrent_reads", "memtable_heap_space", "trickle_fsync"]
RANGES = {"concurrent_writes": [8, 64], "concurrent_reads": [8, 64], "memtable_heap_space": [32, 384]}


@pytest.fixture(scope="module")
def space():
    return FeatureSpace(Catalog.for_store("cassandra"), PARAMETERS, ranges=RANGES, hardware_features=())


def store(config, instance):
    """A noisy store: best at 48 writers, 16 readers, a large memtable, no trickle fsync; 3 % noise per run."""
    value = 10000.0
    value -= 3.0 * (config["concurrent_writes"] - 48) ** 2
    value -= 2.0 * (config["concurrent_reads"] - 16) ** 2
    value += 5.0 * config["memtable_heap_space"]
    value -= 800.0 if config["trickle_fsync"] else 0.0
    key = "%s/%s" % (json.dumps(config, sort_keys=True), instance["seed"])
    noise = random.Random(zlib.crc32(key.encode())).gauss(0, 0.03)
    return value * (1 + noise)


def instances(n=8):
    return [{"workload": "a", "seed": i} for i in range(n)]


def test_friedman_matches_scipy_and_drops_the_worse():
    matrix = [[10, 9, 3, 2.5], [11, 8, 2, 3], [12, 10, 4, 2], [10.5, 9.5, 1, 2.2], [11.5, 8.5, 2.5, 1.5]]
    test = racing.friedman(matrix)
    columns = list(zip(*matrix, strict=True))
    assert test["statistic"] == pytest.approx(stats.friedmanchisquare(*columns).statistic)
    assert test["p_value"] < 0.05
    assert test["best"] == 0 and test["keep"] == [0]  # 1 is always second: significantly worse (Conover)
    same = racing.friedman([[1, 1, 1]] * 6)
    assert same["p_value"] == 1.0 and same["keep"] == [0, 1, 2]


def test_race_finds_a_better_configuration_within_budget(space):
    race = racing.Race(space, instances(), budget_evaluations=400, seed=3, initial=[{}], heap_mb=1024, first_test=3)
    result = race.run(store)
    assert result["evaluations"] <= 400
    best = result["best"]["config"]
    default = space.complete({}, heap_mb=1024)
    mean_best = sum(store(best, {"seed": 100 + i}) for i in range(20)) / 20
    mean_default = sum(store(default, {"seed": 100 + i}) for i in range(20)) / 20
    assert mean_best > 1.05 * mean_default
    assert best["trickle_fsync"] is False
    assert len(result["iterations"]) >= 2
    assert any(item["eliminated"] for item in result["iterations"])


def drive(path, elapsed_s=1.5, **options):
    """Run a race by ask/tell with a new Race object every round, as a playbook does; (result, rounds)."""
    rounds = 0
    while True:
        race = racing.Race(space_of(), instances(), seed=1, **options)
        pending, result = race.ask(str(path))
        if not pending:
            return result, rounds
        rounds += 1
        for entry in pending:
            for instance in entry["instances"]:
                race.tell(str(path), entry["config"], instance["index"], store(entry["config"], instance), elapsed_s)


def space_of():
    return FeatureSpace(Catalog.for_store("cassandra"), PARAMETERS, ranges=RANGES, hardware_features=())


def test_ask_tell_is_the_same_race_and_resumes(space, tmp_path):
    reference = racing.Race(space, instances(), budget_evaluations=60, seed=1).run(store)
    path = tmp_path / "race.jsonl"
    result, rounds = drive(path, budget_evaluations=60)
    assert result["finished"] and result["best"] == reference["best"]
    assert result["evaluations"] == reference["evaluations"]
    assert rounds < reference["evaluations"]  # runs come in groups, not one by one
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["schema"] == racing.HISTORY_SCHEMA
    assert len(lines) == 1 + reference["evaluations"]
    # Seconds are a budget too: 1.5 s per run recorded, so 300 s allow 200 runs.
    timed, _rounds = drive(tmp_path / "timed.jsonl", budget_s=300, estimate_s=1.5)
    assert timed["finished"] and timed["evaluation_s"] <= 300 + 1.5 * 10 and timed["evaluations"] >= 100


def test_asking_writes_nothing_and_another_race_is_refused(space, tmp_path):
    path = tmp_path / "race.jsonl"
    race = racing.Race(space, instances(), budget_evaluations=30, seed=0)
    pending, _result = race.ask(str(path))
    assert pending and not path.exists()
    entry = pending[0]
    race.tell(str(path), entry["config"], entry["instances"][0]["index"], 123.0)
    with pytest.raises(racing.RaceError, match="already has a result"):
        race.tell(str(path), entry["config"], entry["instances"][0]["index"], 124.0)
    other = racing.Race(space, instances(), budget_evaluations=30, seed=9)
    with pytest.raises(racing.RaceError, match="another race.*seed"):
        other.ask(str(path))


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"instances": []}, "instances"),
        ({"budget_evaluations": None}, "budget"),
        ({"budget_evaluations": 0}, "budget_evaluations"),
        ({"confidence": 1.5}, "confidence"),
        (
            {
                "fixed": {
                    "concurrent_writes": 8,
                    "concurrent_reads": 8,
                    "memtable_heap_space": 64,
                    "trickle_fsync": False,
                }
            },
            "fixed",
        ),
    ],
)
def test_bad_input_names_the_field(space, kwargs, field):
    options = {"instances": instances(), "budget_evaluations": 10}
    options.update(kwargs)
    with pytest.raises(racing.RaceError, match=field):
        racing.Race(space, **options)


# ------------------------------------------------------------------------------------------------ irace backend
EVALUATOR = r"""
import json, random, sys, zlib
request = json.load(open(sys.argv[2]))
config, index = request["config"], request["index"]
value = 10000.0 - 3.0 * (config["concurrent_writes"] - 48) ** 2 - 2.0 * (config["concurrent_reads"] - 16) ** 2
value += 5.0 * config["memtable_heap_space"] - (800.0 if config["trickle_fsync"] else 0.0)
value *= 1 + random.Random(zlib.crc32(("%s/%d" % (json.dumps(config, sort_keys=True), index)).encode())).gauss(0, 0.03)
line = {"config": config, "config_key": json.dumps(config, sort_keys=True), "instance": index, "value": value}
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(line) + "\n")
"""


def test_irace_scenario_files_say_the_race(space, tmp_path):
    from ansible_collections.tactician.nosql.plugins.module_utils.planning import irace

    race = racing.Race(space, instances(6), budget_evaluations=60, seed=2, initial=[{}], heap_mb=1024, first_test=4)
    paths = irace.write_scenario(race, str(tmp_path / "irace"), ["true"], str(tmp_path / "h.jsonl"), 60)
    parameters = open(paths["parameters"]).read()
    assert 'concurrent_writes "--concurrent_writes=" i (8, 64)' in parameters
    assert 'trickle_fsync "--trickle_fsync=" c ("true", "false")' in parameters
    assert open(paths["instances"]).read().split() == ["0", "1", "2", "3", "4", "5"]
    scenario = open(paths["scenario"]).read()
    assert "maxExperiments = 60" in scenario and "firstTest = 4" in scenario and 'testType = "F-test"' in scenario
    default = open(paths["configurations"]).read().splitlines()
    assert default[0].split() == race.free and len(default) == 2
    with pytest.raises(irace.IraceError, match="evaluate_command"):
        irace.write_scenario(race, str(tmp_path / "x"), "ansible-playbook", str(tmp_path / "h.jsonl"), 60)


def test_irace_backend_refuses_clearly_without_r(space, tmp_path, monkeypatch):
    from ansible_collections.tactician.nosql.plugins.module_utils.planning import irace

    monkeypatch.setattr(irace.shutil, "which", lambda name: None)
    race = racing.Race(space, instances(), budget_evaluations=60, initial=[{}], heap_mb=1024)
    with pytest.raises(irace.IraceError, match="r-cran-irace"):
        irace.run(race, str(tmp_path), ["true"], str(tmp_path / "h.jsonl"), budget_evaluations=60)


def test_the_original_irace_races_the_same_scenario(space, tmp_path):
    """Real irace (R) over the noisy store, each evaluation through the target runner and the history file."""
    import sys

    from ansible_collections.tactician.nosql.plugins.module_utils.planning import irace

    if not irace.version():
        pytest.skip("Rscript with the irace package is not installed (Debian r-cran-irace)")
    script = tmp_path / "evaluate.py"
    script.write_text(EVALUATOR)
    history = tmp_path / "race.jsonl"
    race = racing.Race(space, instances(), budget_evaluations=200, seed=1, initial=[{}], heap_mb=1024, first_test=4)
    command = [sys.executable, str(script), str(history)]
    with pytest.raises(irace.IraceError, match="Insufficient budget"):
        irace.run(race, str(tmp_path / "small"), command, str(history), budget_evaluations=20)
    result = irace.run(race, str(tmp_path / "irace"), command, str(history), 200)
    assert 0 < result["evaluations"] <= 200 and result["configurations"] > 5
    best = result["best"]["config"]
    default = space.complete({}, heap_mb=1024)
    assert store(best, {"seed": 99}) > store(default, {"seed": 99})
    assert result["irace_version"].startswith("3.") or result["irace_version"].startswith("4.")


def test_irace_runner_answers_a_repeated_run_from_the_history(space, tmp_path):
    import subprocess

    from ansible_collections.tactician.nosql.plugins.module_utils.planning import irace

    race = racing.Race(space, instances(4), budget_evaluations=60, initial=[{}], heap_mb=1024)
    history = tmp_path / "race.jsonl"
    config = {"concurrent_writes": 40, "concurrent_reads": 16, "memtable_heap_space": 200, "trickle_fsync": False}
    history.write_text(json.dumps({"config": config, "config_key": "k", "instance": 2, "value": 1234.5}) + "\n")
    paths = irace.write_scenario(race, str(tmp_path / "irace"), ["false"], str(history), 60)
    args = ["--%s=%s" % (k, str(v).lower() if isinstance(v, bool) else v) for k, v in config.items()]
    done = subprocess.run([paths["runner"], "7", "3", "99", "2", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and float(done.stdout) == -1234.5  # the command (false) was never run
    done = subprocess.run([paths["runner"], "7", "1", "99", "0", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "evaluation failed" in done.stdout


def test_check_results_reads_text_numbers_and_names_bad_fields():
    runs = racing.check_results([{"config": {"a": 1}, "index": "2", "value": "812.5", "ops": 40625}])
    wanted = {"config": {"a": 1}, "index": 2, "value": 812.5, "elapsed_s": 0.0, "extra": {"run": {"ops": 40625}}}
    assert runs == [wanted]
    with pytest.raises(racing.RaceError, match=r"results\[0\]: index, value required"):
        racing.check_results([{"config": {}}])
    with pytest.raises(racing.RaceError, match=r"results\[0\].config: expected the configuration mapping"):
        racing.check_results([{"config": "a=1", "index": 0, "value": 1}])
    with pytest.raises(racing.RaceError, match=r"results\[1\].value: 'fast' is not a number"):
        racing.check_results([{"config": {}, "index": 0, "value": 1}, {"config": {}, "index": 0, "value": "fast"}])
    with pytest.raises(racing.RaceError, match=r"results\[0\].index: 1.5 is not a whole number"):
        racing.check_results([{"config": {}, "index": 1.5, "value": 1}])
