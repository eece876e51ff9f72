# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The module exporter_daemon as Ansible runs it: start on readiness, a second run unchanged, the environment kept
out of the result, stop; a bad option fails naming it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from testlib import ROOT

from ansible_collections.tactician.nosql.plugins.module_utils.core import process

MODULE = os.path.join(ROOT, "plugins", "modules", "exporter_daemon.py")
COLLECTIONS = os.path.join(ROOT, ".collections")


def run_module(tmp_path, args, check_mode=False):
    """Run the module as Ansible does (a JSON file of arguments) and return its JSON result."""
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    done = subprocess.run(
        [sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(done.stdout)


def _args(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return dict(
        name="web",
        argv=[sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        pid_file=str(tmp_path / "web.pid"),
        environment={"WEB_PASSWORD": "not-to-be-shown"},
        ready_url="http://127.0.0.1:%d/" % port,
        start_timeout=30,
    )


def test_start_again_and_stop(tmp_path):
    args = _args(tmp_path)
    try:
        planned = run_module(tmp_path, args, check_mode=True)
        assert planned["changed"] and planned["actions"] == ["start"] and not os.path.exists(args["pid_file"])
        started = run_module(tmp_path, args)
        assert started["changed"] and started["actions"] == ["start"] and started["name"] == "web"
        assert process.running_pid(args["pid_file"]) == started["pid"]
        assert "not-to-be-shown" not in json.dumps(started)
        again = run_module(tmp_path, args)
        assert again["changed"] is False and again["pid"] == started["pid"]
        stopped = run_module(tmp_path, dict(args, state="stopped"))
        assert stopped["changed"] and stopped["actions"] == ["stop"] and not process.pid_alive(started["pid"])
    finally:
        pid = process.read_pid(args["pid_file"])
        if pid and process.pid_alive(pid):
            process.terminate(pid, timeout=10)


def test_a_ready_url_elsewhere_fails_naming_it(tmp_path):
    result = run_module(tmp_path, dict(_args(tmp_path), ready_url="http://203.0.113.7:9100/"))
    assert result["failed"] and result["msg"].startswith("ready_url: ")
    assert not os.path.exists(str(tmp_path / "web.pid"))
