# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

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
