#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: exporter_daemon
short_description: Start, stop or restart one monitoring process (Prometheus, an exporter) from its argument vector
description:
  - Runs O(argv) detached from Ansible (never through a shell) and records the process's own PID in O(pid_file),
    so that a second run finds it again and changes nothing.
  - A start returns when O(ready_url) answers HTTP 200 (a GET on this machine, no proxy), or, for a server that
    speaks no HTTP (the lab's FerretDB), when O(ready_tcp) accepts a TCP connection.
  - With O(restart_on_change), a running process is restarted when one of O(config_files) (by digest), O(argv) or
    O(environment) differs from what it was started with.
  - Secrets (a password the exporter logs in with) go in O(environment) only - the argument vector of a process
    can be read by every user of the machine.
  - Stop sends SIGTERM and waits for the process to exit (SIGKILL after O(stop_timeout)).
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  name:
    description: Name of the process, used in messages and results.
    type: str
    required: true
  state:
    description: Wanted state of the process.
    type: str
    choices: [started, stopped, restarted]
    default: started
  argv:
    description:
      - The program (absolute path or a name on C(PATH)) and its arguments, one item each.
      - Required with O(state=started) and O(state=restarted); with O(state=stopped) its first item identifies
        the recorded process (the PID in O(pid_file) must run this program).
    type: list
    elements: str
    required: true
  pid_file:
    description: Where the process's PID is recorded (its directory is created).
    type: path
    required: true
  log_file:
    description: File for the process's standard output and error; defaults to O(pid_file) with C(.out) appended.
    type: path
  environment:
    description:
      - Variables added to the process's environment; the way to hand it secrets (never in O(argv)).
      - Part of what restarts a running process when it changes.
    type: dict
    default: {}
  config_files:
    description: Files the process reads at start; with O(restart_on_change) a change of their content restarts it.
    type: list
    elements: path
    default: []
  ready_url:
    description:
      - An C(http://) URL that answers 200 once the process serves, for example C(http://127.0.0.1:9090/-/ready);
        its host is a loopback address or an IP address of this machine (the process's own listen address).
      - Without it, a start returns as soon as the process runs.
    type: str
  ready_tcp:
    description:
      - C(host:port) (C([address]:port) for IPv6) that accepts a TCP connection once the process serves, for
        example C(127.0.0.1:27027); its host is a loopback address or an IP address of this machine.
      - A start fails without starting anything when the address accepts connections already (another process
        holds it).
      - Mutually exclusive with O(ready_url); without either, a start returns as soon as the process runs.
    type: str
  start_timeout:
    description: Seconds to wait for O(ready_url) to answer 200 or O(ready_tcp) to accept a connection.
    type: int
    default: 60
  stop_timeout:
    description: Seconds to wait for the process to exit after SIGTERM (then SIGKILL).
    type: int
    default: 30
  restart_on_change:
    description:
      - With O(state=started), restart a running process whose O(config_files), O(argv) or O(environment) changed.
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
notes:
  - The digest of what the process was started with is kept next to O(pid_file) (mode 0600; it covers
    O(environment)).
"""

EXAMPLES = r"""
- name: Run a Redis exporter for every node of a cluster (multi-target mode)
  tactician.nosql.exporter_daemon:
    name: redis_exporter
    argv:
      - /usr/bin/prometheus-redis-exporter
      - --web.listen-address=127.0.0.1:9121
      - --redis.addr=
    environment:
      REDIS_USER: tactician
      REDIS_PASSWORD: "{{ redis_password }}"
    pid_file: /var/lib/tactician/monitoring/redis_exporter/exporter.pid
    ready_url: http://127.0.0.1:9121/health

- name: Run Prometheus, restarted when its configuration changes
  tactician.nosql.exporter_daemon:
    name: prometheus
    argv:
      - /usr/bin/prometheus
      - --config.file=/var/lib/tactician/monitoring/prometheus/prometheus.yml
      - --storage.tsdb.path=/var/lib/tactician/monitoring/prometheus/data
      - --web.listen-address=127.0.0.1:9390
    config_files:
      - /var/lib/tactician/monitoring/prometheus/prometheus.yml
    pid_file: /var/lib/tactician/monitoring/prometheus/prometheus.pid
    ready_url: http://127.0.0.1:9390/-/ready

- name: Stop it
  tactician.nosql.exporter_daemon:
    name: prometheus
    argv: [/usr/bin/prometheus]
    pid_file: /var/lib/tactician/monitoring/prometheus/prometheus.pid
    state: stopped
"""

RETURN = r"""
pid:
  description: PID of the running process (null once stopped).
  returned: always
  type: int
actions:
  description: What was done (or would be, in check mode) - C(stop), C(start).
  returned: always
  type: list
  elements: str
  sample: [stop, start]
timings:
  description: Seconds taken by each step.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.stores.exporters import STATES, exporter_daemon


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=STATES, default="started"),
            argv=dict(type="list", elements="str", required=True),
            pid_file=dict(type="path", required=True),
            log_file=dict(type="path"),
            environment=dict(type="dict", default={}, no_log=True),
            config_files=dict(type="list", elements="path", default=[]),
            ready_url=dict(type="str"),
            ready_tcp=dict(type="str"),
            start_timeout=dict(type="int", default=60),
            stop_timeout=dict(type="int", default=30),
            restart_on_change=dict(type="bool", default=True),
        ),
        mutually_exclusive=[["ready_url", "ready_tcp"]],
        supports_check_mode=True,
    )
    try:
        result = exporter_daemon(module.params, module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    result.pop("warnings")
    module.exit_json(name=module.params["name"], **result)


if __name__ == "__main__":
    main()
