#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_usage
short_description: Read a node's CPU, memory and disk on the node itself, over a window, for observe's samples
description:
  - Runs on the node (C(delegate_to) the node's inventory host, usually with C(async) and C(poll=0) beside
    M(tactician.nosql.observe)) and reads the machine every O(interval) seconds for O(duration) seconds -
    C(/proc/stat) (CPU split), C(/proc/meminfo) (memory in use), the CPU seconds of the server process in
    O(pid_file), and at the end the file system holding O(data_dir).
  - Returns the readings themselves, not one figure, so observe can take the resources of each of its samples over
    exactly that sample's window (O(tactician.nosql.observe#module:node_usage)). The node's clock and the
    controller's must agree to within a fraction of the window (NTP).
  - Standard library only; Linux.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  node:
    description: The node's name in the inventory, returned as it is so observe can match the readings to its node.
    type: str
    required: true
  duration:
    description: Seconds to read for. Give the observation window plus the seconds its start may lag behind this
      task's (launching the same task on the other nodes).
    type: float
    default: 30
  interval:
    description: Seconds between readings (at least 0.1).
    type: float
    default: 1
  pid_file:
    description: PID file of the server process on the node; adds the process's own CPU (C(process_cpu_pct)).
    type: path
  data_dir:
    description: Data directory of the server on the node; adds the disk usage of its file system.
    type: path
  cassandra_home:
    description:
      - A Cassandra installation on the node (with C(lib/)). After the window, C(nodetool tablestats),
        C(tablehistograms) and C(compactionstats) are run on the node against its own JMX and returned in
        RV(state) - the SSTables per read, live SSTables and estimated pending compactions that Cassandra 5.0
        gives through JMX only, so they are read where a JMX bound to the node's loopback answers.
    type: path
  jmx_host:
    description: Address of the node's JMX, for O(cassandra_home).
    type: str
    default: 127.0.0.1
  jmx_port:
    description: Port of the node's JMX, for O(cassandra_home).
    type: int
    default: 7199
  jmx_user:
    description: JMX user, when the node's JMX asks for one.
    type: str
  jmx_password:
    description: Its password (written to a file of mode 0600 for nodetool, never on its command line). Never logged.
    type: str
  keyspaces:
    description: The keyspaces whose tables count for O(cassandra_home)'s readings (default every non-system one).
    type: list
    elements: str
  java:
    description: The java that runs nodetool.
    type: str
    default: java
attributes:
  check_mode:
    description: Reading changes nothing; check mode reads as well.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
notes:
  - Only C(/proc) and C(statvfs) are read; nothing is written on the node.
"""

EXAMPLES = r"""
- name: Read every node's CPU, memory and disk over the next observation window
  tactician.nosql.node_usage:
    node: "{{ item }}"
    duration: 40
    pid_file: /run/cassandra/cassandra.pid
    data_dir: /var/lib/cassandra
    cassandra_home: /usr/share/cassandra  # and nodetool's readings after the window, on the node's own JMX
  delegate_to: "{{ item }}"
  loop: "{{ groups['cassandra'] }}"
  async: 160
  poll: 0
  register: usage_jobs
"""

RETURN = r"""
node:
  description: O(node), as given.
  returned: success
  type: str
snapshots:
  description: The readings, oldest first - C(t) (epoch seconds on the node's clock), C(cpu) (ticks of the
    C(/proc/stat) cpu line), C(mem) (C(mem_bytes), C(mem_pct), C(mem_total_bytes)), C(process_cpu_s).
  returned: success
  type: list
  elements: dict
disk:
  description: C(disk_bytes), C(disk_pct), C(disk_total_bytes) of the file system holding O(data_dir); null without it.
  returned: success
  type: dict
cpus:
  description: CPUs the node's kernel reports.
  returned: success
  type: int
pid:
  description: The server's process ID read from O(pid_file); null without it.
  returned: success
  type: int
state:
  description: With O(cassandra_home) - C(pending_compactions_estimated), C(live_sstables), C(sstables_per_read)
    and C(sstables_per_read_max) read after the window; observe puts them into the node's sample.
  returned: with O(cassandra_home), when nodetool answered
  type: dict
state_error:
  description: Why O(cassandra_home)'s readings are missing (the CPU, memory and disk readings stand).
  returned: when nodetool failed
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import state as cassandra_state
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import resources


def _cassandra_state(params):
    """(state, None) of the node's nodetool readings, or (None, why) - a failure leaves the other readings."""
    try:
        return (
            cassandra_state.nodetool_state(
                params["cassandra_home"],
                params["jmx_host"],
                params["jmx_port"],
                params["keyspaces"] or None,
                java=params["java"],
                jmx_user=params["jmx_user"],
                jmx_password=params["jmx_password"],
            ),
            None,
        )
    except Exception as exc:  # nodetool, JMX or a parser: the state stays unknown, the readings stand
        return None, "%s: %s" % (type(exc).__name__, exc)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node=dict(type="str", required=True),
            duration=dict(type="float", default=30.0),
            interval=dict(type="float", default=1.0),
            pid_file=dict(type="path"),
            data_dir=dict(type="path"),
            cassandra_home=dict(type="path"),
            jmx_host=dict(type="str", default="127.0.0.1"),
            jmx_port=dict(type="int", default=7199),
            jmx_user=dict(type="str"),
            jmx_password=dict(type="str", no_log=True),
            keyspaces=dict(type="list", elements="str", no_log=False),
            java=dict(type="str", default="java"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        measured = resources.measure_node(
            params["duration"], params["interval"], pid_file=params["pid_file"], data_dir=params["data_dir"]
        )
    except resources.ReadingError as exc:
        fail(module, exc, node=params["node"])
    except OSError as exc:
        module.fail_json(msg="%s: cannot be read on this node: %s" % (params["node"], exc), node=params["node"])
    if params["cassandra_home"]:
        state, why = _cassandra_state(params)
        if why is None:
            measured["state"] = state
        else:
            measured["state_error"] = why
    module.exit_json(changed=False, node=params["node"], **measured)


if __name__ == "__main__":
    main()
