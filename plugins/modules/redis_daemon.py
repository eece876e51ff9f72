#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: redis_daemon
short_description: Start, stop or restart one redis-server from its configuration file
description:
  - Runs C(redis-server CONFIG --daemonize no) detached from Ansible and records the server's own PID, so a
    second run finds it again and changes nothing.
  - Start returns when the node answers PING with the connection options (its ACL user and TLS).
  - Stop sends C(SHUTDOWN SAVE) (or C(NOSAVE)) without client retries, then waits for the process to exit.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.redis
options:
  state:
    description: Wanted state of the server.
    type: str
    choices: [started, stopped, restarted]
    default: started
  config_file:
    description: The server's configuration file (it must set C(port) and C(bind) to O(login_port) and O(login_host)).
    type: path
    required: true
  pid_file:
    description: Where the server's PID is recorded.
    type: path
    required: true
  log_file:
    description: File for the server's standard output; defaults to O(pid_file) with C(.out) appended.
    type: path
  redis_server:
    description: The redis-server executable.
    type: path
    default: redis-server
  save_on_stop:
    description: Save an RDB snapshot when stopping (C(SHUTDOWN SAVE)); a replica restarted from it resyncs partially.
    type: bool
    default: true
  start_timeout:
    description: Seconds to wait for the first PING answer.
    type: int
    default: 60
  stop_timeout:
    description: Seconds to wait for the process to exit after SHUTDOWN (then SIGTERM).
    type: int
    default: 30
  restart_on_change:
    description:
      - With O(state=started), restart a running server whose configuration file was modified after it started.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
"""

EXAMPLES = r"""
- name: Start a cluster node
  tactician.nosql.redis_daemon:
    config_file: /var/lib/tactician/lab/redis/6381/redis.conf
    pid_file: /var/lib/tactician/lab/redis/6381/redis.pid
    login_port: 6381
    login_user: tactician
    login_password: "{{ redis_password }}"
"""

RETURN = r"""
pid:
  description: PID of the running server (null once stopped).
  returned: always
  type: int
actions:
  description: What was done (or would be, in check mode).
  returned: always
  type: list
  elements: str
timings:
  description: Seconds taken by each step.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import STATES
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter
from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis.daemon import redis_daemon


def main():
    argument_spec = redis_adapter.redis_argument_spec()
    argument_spec.update(
        state=dict(type="str", choices=STATES, default="started"),
        restart_on_change=dict(type="bool", default=False),
        config_file=dict(type="path", required=True),
        pid_file=dict(type="path", required=True),
        log_file=dict(type="path"),
        redis_server=dict(type="path", default="redis-server"),
        save_on_stop=dict(type="bool", default=True),
        start_timeout=dict(type="int", default=60),
        stop_timeout=dict(type="int", default=30),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    fail_imports(module, redis_adapter.missing_libraries())
    try:
        result = redis_daemon(module.params, module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    result.pop("warnings")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
