#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_daemon
short_description: Start, stop (drain first) or restart one Apache Cassandra node run from its jars
description:
  - Runs C(org.apache.cassandra.service.CassandraDaemon) with the Java 17 module flags that Cassandra ships,
    detached from Ansible, and records the JVM's own PID.
  - A started node is found again by its PID file and its configuration path, so a second run changes nothing.
  - A node is always drained (C(nodetool drain) over local JMX) before it is stopped.
  - Start returns when the CQL port answers; use M(tactician.nosql.cassandra_health) to wait until the ring sees it UN.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  state:
    description: Wanted state of the node.
    type: str
    choices: [started, stopped, restarted]
    default: started
  cassandra_home:
    description: Directory whose C(lib/) holds the Cassandra jars and C(conf/logback-tools.xml) (nodetool logging).
    type: path
    required: true
  config_file:
    description: The node's C(cassandra.yaml).
    type: path
    required: true
  logback_file:
    description: The node's C(logback.xml).
    type: path
    required: true
  storage_dir:
    description: The node's storage directory (C(cassandra.storagedir)); heap dumps go there too.
    type: path
    required: true
  log_dir:
    description: The node's log directory; C(system.log) and the JVM's own output C(stdout.log) are written there.
    type: path
    required: true
  pid_file:
    description: Where the JVM's PID is recorded.
    type: path
    required: true
  rpc_address:
    description: Address the node serves CQL on.
    type: str
    default: 127.0.0.1
  jmx_host:
    description:
      - Address its local JMX listens on (Cassandra's local JMX binds to 127.0.0.1 whatever the node's address).
    type: str
    default: 127.0.0.1
  native_port:
    description: CQL port, polled to know the node started.
    type: int
    default: 9042
  jmx_port:
    description: Local JMX port of this node (distinct per node on one machine).
    type: int
    default: 7199
  jmx_user:
    description: JMX user, when JMX authentication is on.
    type: str
  jmx_password:
    description: JMX password; passed to nodetool through a private password file, never on its command line.
    type: str
  heap_size:
    description: JVM heap (C(-Xms) and C(-Xmx)), for example C(512M) or C(1G).
    type: str
    default: 512M
  java:
    description: The java executable (Java 17).
    type: path
    default: java
  jvm_options:
    description: Extra JVM options appended before the class path.
    type: list
    elements: str
    default: []
  jemalloc:
    description:
      - The node's native memory allocator. C(off) runs it on glibc's malloc. C(auto) preloads an installed
        jemalloc (C(LD_PRELOAD), the first C(libjemalloc.so), C(libjemalloc.so.2) or C(libjemalloc.so.1) in the
        usual library folders; glibc's malloc when there is none), as Cassandra's C(bin/cassandra) does to improve
        its off-heap allocation; that script looks for the unversioned and C(.1) names only, so on a Debian machine
        with C(libjemalloc2) alone it runs on glibc. An absolute path preloads that library (it must exist).
      - glibc's malloc keeps freed off-heap memory (a row cache that shrank) in the process; jemalloc returns it.
      - A change restarts a running node when O(restart_on_change) is set, as a new O(heap_size) does.
    type: str
    default: "off"
  cpus:
    description:
      - The CPUs the node runs on, in C(taskset)'s list syntax (C(1), C(2-3), C(0,2)), or C(upper-half) for the
        upper half of the machine's CPUs (in a one-machine lab the lower half is left to the load driver and the
        controller, so that neither takes CPU from the servers; nothing on a machine of one CPU).
      - Set when the node starts; a running node on other CPUs is moved onto these live (every thread), without a
        restart. Unset, the node runs wherever the operating system puts it.
    type: str
  memory_limit:
    description:
      - The node's memory, as a real machine's. A memory control group (cgroup v1 C(memory), or v2) with this
        limit, for example C(2G) or C(1536M). It caps the JVM and the page cache the node's file reads use, so a
        node whose data is larger than the limit reads from the disk. Cover the heap and about 0.5-1 GiB of
        off-heap memory; what is left is the node's page cache.
      - Set when the node starts; a running node is moved into the group, and its limit changed, live. The group
        is removed when the node stops. Needs root. Unset, the node runs without a memory group.
    type: str
  memory_group:
    description:
      - Name of the node's memory group (under C(tactician/) in the memory hierarchy), and of its I/O group when a
        disk read limit is set. Default C(cassandra-<rpc_address>-<native_port>).
    type: str
  disk_read_limit:
    description:
      - The bytes per second the node may read from the disk that holds O(storage_dir), as a cloud volume's
        throughput cap (C(125M) is a general-purpose volume's baseline), for example C(80M) or C(1.5G). An I/O
        control group (cgroup v1 C(blkio) throttling, or v2 C(io.max)). On one machine it also keeps nodes that
        share a disk from taking each other's reads.
      - Reads only - cgroup v1 does not charge buffered writes to the process that made them.
      - Set when the node starts; a running node is moved into the group, and its limits changed or lifted, live.
        The group is removed when the node stops. Needs root. Unset (and O(disk_read_iops) unset), no I/O group.
    type: str
  disk_read_iops:
    description:
      - The read operations per second the node may issue to the disk that holds O(storage_dir), as a cloud
        volume's IOPS cap (C(3000) is a general-purpose volume's baseline); 10 or more. Beside or instead of
        O(disk_read_limit), in the same I/O group.
    type: int
  fast_start:
    description:
      - Shorten the ring delay and gossip settling for a one-machine lab (C(-Dcassandra.ring_delay_ms=5000),
        C(-Dcassandra.skip_wait_for_gossip_to_settle=0), C(-Dcassandra.superuser_setup_delay_ms=0)).
    type: bool
    default: true
  drain:
    description: Drain the node before stopping it. Leave on; off only for a node that cannot answer JMX.
    type: bool
    default: true
  force:
    description: When the drain fails, stop the node anyway (with a warning) instead of failing and leaving it up.
    type: bool
    default: false
  start_timeout:
    description: Seconds to wait for the CQL port after the JVM starts.
    type: int
    default: 240
  stop_timeout:
    description: Seconds to wait for the drain and for the JVM to exit after SIGTERM (then SIGKILL).
    type: int
    default: 90
  restart_on_change:
    description:
      - With O(state=started), restart a running server whose cassandra.yaml or logback.xml was modified
        after it started, or whose O(heap_size), O(jvm_options), O(java) or O(fast_start) differ from those it was
        started with.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns no diff.
    support: none
notes:
  - Needs Java 17 on the managed node. Runs no shell; the JVM command line carries no secret.
"""

EXAMPLES = r"""
- name: Start node 2 of the lab
  tactician.nosql.cassandra_daemon:
    cassandra_home: /opt/tactician/cassandra/5.0.9
    config_file: /var/lib/tactician/lab/cassandra/node2/conf/cassandra.yaml
    logback_file: /var/lib/tactician/lab/cassandra/node2/conf/logback.xml
    storage_dir: /var/lib/tactician/lab/cassandra/node2/data
    log_dir: /var/lib/tactician/lab/cassandra/node2/logs
    pid_file: /var/lib/tactician/lab/cassandra/node2/cassandra.pid
    rpc_address: 127.0.0.2
    jmx_port: 7299

- name: Drain and stop it
  tactician.nosql.cassandra_daemon:
    state: stopped
    cassandra_home: /opt/tactician/cassandra/5.0.9
    config_file: /var/lib/tactician/lab/cassandra/node2/conf/cassandra.yaml
    logback_file: /var/lib/tactician/lab/cassandra/node2/conf/logback.xml
    storage_dir: /var/lib/tactician/lab/cassandra/node2/data
    log_dir: /var/lib/tactician/lab/cassandra/node2/logs
    pid_file: /var/lib/tactician/lab/cassandra/node2/cassandra.pid
    rpc_address: 127.0.0.2
    jmx_port: 7299
"""

RETURN = r"""
pid:
  description: PID of the running JVM (null once stopped).
  returned: always
  type: int
  sample: 41235
actions:
  description: What was done (or would be, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: [drain, stop (terminated), start]
timings:
  description: Seconds taken by each step.
  returned: always
  type: dict
  sample: {drain: 2.41, stop: 3.02, start: 38.7}
malloc:
  description: The allocator the node was started with - the path of the jemalloc library it preloads, or C(glibc).
  returned: when the node was (re)started
  type: str
  sample: /usr/lib/x86_64-linux-gnu/libjemalloc.so.2
memory:
  description:
    - The node's memory group when O(memory_limit) is set - its path, cgroup version, limit, usage, page cache and
      anonymous memory in bytes, and (cgroup v1) failcnt, the times the limit was reached.
  returned: when O(memory_limit) is set
  type: dict
  sample: {group: /sys/fs/cgroup/memory/tactician/cassandra-127.0.0.31-9042, version: 1, limit: 2147483648,
           usage: 2140000000, cache: 680000000, anon: 1430000000, failcnt: 4512}
disk:
  description:
    - The node's I/O group when O(disk_read_limit) or O(disk_read_iops) is set - its path, cgroup version, the disk
      (major:minor), its read limits (bytes and operations per second; null for none) and what the node read from
      that disk since the group was made (bytes, operations).
  returned: when O(disk_read_limit) or O(disk_read_iops) is set
  type: dict
  sample: {group: /sys/fs/cgroup/blkio/tactician/cassandra-127.0.0.31-9042, version: 1, device: "254:0",
           read_bps: 83886080, read_iops: null, read_bytes: 5218304000, read_ops: 61210}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra.daemon import cassandra_daemon
from ansible_collections.tactician.nosql.plugins.module_utils.stores.daemons import STATES


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=STATES, default="started"),
            restart_on_change=dict(type="bool", default=False),
            cassandra_home=dict(type="path", required=True),
            config_file=dict(type="path", required=True),
            logback_file=dict(type="path", required=True),
            storage_dir=dict(type="path", required=True),
            log_dir=dict(type="path", required=True),
            pid_file=dict(type="path", required=True),
            rpc_address=dict(type="str", default="127.0.0.1"),
            native_port=dict(type="int", default=9042),
            jmx_host=dict(type="str", default="127.0.0.1"),
            jmx_port=dict(type="int", default=7199),
            jmx_user=dict(type="str"),
            jmx_password=dict(type="str", no_log=True),
            heap_size=dict(type="str", default="512M"),
            java=dict(type="path", default="java"),
            jvm_options=dict(type="list", elements="str", default=[]),
            jemalloc=dict(type="str", default="off"),
            fast_start=dict(type="bool", default=True),
            cpus=dict(type="str"),
            memory_limit=dict(type="str"),
            memory_group=dict(type="str"),
            disk_read_limit=dict(type="str"),
            disk_read_iops=dict(type="int"),
            drain=dict(type="bool", default=True),
            force=dict(type="bool", default=False),
            start_timeout=dict(type="int", default=240),
            stop_timeout=dict(type="int", default=90),
        ),
        supports_check_mode=True,
    )
    try:
        result = cassandra_daemon(module.params, module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    for warning in result.pop("warnings"):
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
