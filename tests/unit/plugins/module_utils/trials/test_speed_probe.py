# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import time

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.trials import speed_probe


def test_samples_are_read_back_and_bad_lines_skipped(tmp_path):
    path = tmp_path / "speed.txt"
    path.write_text("100.0 30.5\nbroken\n101.0 29.5\n102.5 x\n")
    assert speed_probe.read_samples(str(path)) == [(100.0, 30.5), (101.0, 29.5)]
    assert speed_probe.read_samples(str(tmp_path / "missing.txt")) == []


def test_a_window_speed_is_the_median_of_its_samples():
    samples = [(10.0, 20.0), (11.0, 40.0), (12.0, 42.0), (13.0, 41.0), (20.0, 5.0)]
    assert speed_probe.speed_between(samples, 11.0, 13.0) == 41.0
    assert speed_probe.speed_between(samples, 30.0, 40.0) is None


def test_the_probe_writes_samples_and_stops(tmp_path):
    path = tmp_path / "speed.txt"
    speed_probe.probe({0}, str(path), interval=0.01, stop_after=0.2)
    samples = speed_probe.read_samples(str(path))
    assert len(samples) >= 3
    assert all(speed > 0 for _at, speed in samples)


def test_a_probed_load_run_gives_its_throughput_per_unit_of_cpu_speed(monkeypatch):
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run

    class FakeProbe:
        def __init__(self, cpus, path):
            self.cpus = cpus

        def __enter__(self):
            self.began = time.time()
            return self

        def __exit__(self, *exc):
            return False

        def samples(self):
            return [(self.began - 5.0, 1.0), (self.began, 40.0), (self.began, 50.0), (time.time(), 60.0)]

    monkeypatch.setattr(speed_probe, "SpeedProbe", FakeProbe)
    result = load_run._probed(lambda: {"throughput": 5000.0}, {0})
    assert result["cpu_speed"] == 50.0 and result["throughput_per_speed"] == 100.0


def test_a_bad_probe_cpu_list_is_refused_before_anything_runs():
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run

    params = load_run.with_defaults(store="cassandra", hosts=["127.0.0.1"], driver_home="/x", speed_probe_cpus="a-b")
    with pytest.raises(load_run.LoadError, match="speed_probe_cpus: 'a-b' is not a CPU list"):
        load_run.plan(params)
