from __future__ import annotations

import sys

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import process


def test_spawn_records_the_real_pid_and_terminate_stops_it(tmp_path):
    pid_file = str(tmp_path / "p.pid")
    log = str(tmp_path / "out.log")
    pid = process.spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"], pid_file, log)
    try:
        assert process.read_pid(pid_file) == pid
        assert process.running_pid(pid_file, marker="time.sleep(60)") == pid
        assert process.running_pid(pid_file, marker="something else") is None
        process.wait_until(lambda: "up" in process.tail(log), 10, 0.05)
    finally:
        assert process.terminate(pid, timeout=10) in ("terminated", "killed")
    assert not process.pid_alive(pid)


def test_wait_until_reports_a_dead_process_with_its_log(tmp_path):
    pid_file = str(tmp_path / "p.pid")
    log = str(tmp_path / "out.log")
    pid = process.spawn([sys.executable, "-c", "print('boom: bad config')"], pid_file, log)
    with pytest.raises(process.ProcessError, match="boom: bad config"):
        process.wait_until(lambda: False, 10, 0.05, alive_pid=pid, log_file=log)


def test_wait_until_times_out_naming_what_it_waited_for():
    with pytest.raises(process.ProcessError, match="timed out after 0s waiting for the moon"):
        process.wait_until(lambda: False, 0, 0.01, what="the moon")


def test_read_pid_of_missing_or_bad_file(tmp_path):
    assert process.read_pid(str(tmp_path / "none")) is None
    bad = tmp_path / "bad.pid"
    bad.write_text("not a pid")
    assert process.read_pid(str(bad)) is None
    assert process.running_pid(str(bad)) is None


def test_port_open_on_a_closed_port():
    assert process.port_open("127.0.0.1", 1, timeout=0.2) is False


def test_cpu_lists_parse_as_taskset_reads_them(monkeypatch):
    monkeypatch.setattr(process.os, "cpu_count", lambda: 8)
    assert process.parse_cpus("1") == {1}
    assert process.parse_cpus("2-3,6") == {2, 3, 6}
    assert process.parse_cpus("upper-half") == {4, 5, 6, 7}
    assert process.parse_cpus("") is None and process.parse_cpus(None) is None
    assert process.format_cpus({2, 3, 6, 0}) == "0,2-3,6" and process.format_cpus(None) == "all"


@pytest.mark.parametrize("spec", ["a", "1-", "3-1", "0-8", "9", "upper"])
def test_a_bad_cpu_list_names_the_field_and_the_allowed_forms(monkeypatch, spec):
    monkeypatch.setattr(process.os, "cpu_count", lambda: 8)
    with pytest.raises(process.CoreError, match=r"^cassandra_node_cpus: .*(CPU list|outside 0-7)"):
        process.parse_cpus(spec, field="cassandra_node_cpus")


def test_the_lab_split_leaves_the_lower_half_to_the_clients(monkeypatch):
    monkeypatch.setattr(process.os, "cpu_count", lambda: 2)
    assert process.cpu_split() == ({0}, {1})
    monkeypatch.setattr(process.os, "cpu_count", lambda: 1)
    assert process.cpu_split() == (None, None) and process.parse_cpus("upper-half") is None


def test_a_spawned_server_runs_on_its_cpus_and_is_moved_live(tmp_path):
    pid_file = str(tmp_path / "p.pid")
    mine = sorted(process.os.sched_getaffinity(0))
    one = {mine[-1]}
    pid = process.spawn(
        [sys.executable, "-c", "import time; time.sleep(60)"], pid_file, str(tmp_path / "out.log"), cpus=one
    )
    try:
        assert process.os.sched_getaffinity(pid) == one
        assert process.pin(pid, one) is False
        if len(mine) > 1:
            assert process.pin(pid, {mine[0]}) is True and process.os.sched_getaffinity(pid) == {mine[0]}
    finally:
        process.terminate(pid, timeout=10)
