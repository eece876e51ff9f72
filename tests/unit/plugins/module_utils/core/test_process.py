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
