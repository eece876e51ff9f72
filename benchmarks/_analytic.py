# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The analytic stores of the simulations: one node's ops/s on a VM type with a configuration, at a read ratio.

They stand in for a throughput surrogate wherever none is available (a fresh clone has no lab-trained model) and
for the VM types no lab machine can measure. Every number below is an assumption written down, not a measurement:
the simulations built on them show what the planners do with known trade-offs, not what a real store gains.

Cassandra (``cassandra_node_ops``): reads and writes share the node's time, ops = 1 / (r / R + (1 - r) / W).
- W = 3,000 writes/s per sustained vCPU x the configuration's write factor (the commit log and memtables are
  CPU-bound);
- R = 2,500 reads/s per sustained vCPU x the read factor / (1 + miss cost x (1 - hit)), hit = the share of the
  node's data (``data_gb``) the page cache holds: RAM - heap - 1 GiB for the OS; a miss costs 4 hits on network
  storage, 1.5 on the local NVMe of storage-family types (i3);
- configurations (the trade-offs of IRIS Fig. 1): default (factors 1 / 1, the heap of cassandra-env.sh:
  max(min(RAM/2, 1 GiB), min(RAM/4, 8 GiB))), read-optimized (1.25 / 0.70), write-optimized (0.70 / 1.25, a heap
  of half the RAM up to 12 GiB for large memtables, so less page cache; needs 8 GiB of RAM) and balanced
  (1.08 / 1.08);
- a burstable type (family burstable, t3) sustains 30 % of its vCPUs under saturation.

Redis used as a cache in front of a database (OptimusCloud section 4.6; ``redis_node_ops``): single-threaded, so
the vCPU count does not matter.
- a node serves 50,000 commands/s (x 1.15 on compute-family cores, x 0.6 on a burstable type);
- reads: hit = min(1, maxmemory / working set) ** a, a = 0.4 for allkeys-lfu, 0.5 for allkeys-lru, 0.8 for
  allkeys-random (skewed keys: a policy that keeps the hot keys hits more with the same memory); a miss goes to
  the database, 8,000 reads/s per node: R = 1 / (1 / S + (1 - hit) / 8,000), S the node's speed;
- the policy's upkeep on every command: S x 0.92 for allkeys-lfu (counters), x 0.96 for allkeys-lru, x 1 for
  allkeys-random;
- writes: persistence forks, and copy-on-write needs headroom: with maxmemory at 75 % of the RAM writes run at
  0.8, at 90 % at 0.45 (swapping), at 50 % at full speed;
- configurations: maxmemory in {50, 75, 90} % of the RAM x the three policies.
"""

from __future__ import annotations

CASSANDRA_DATA_GB = 12.0
"""Data per Cassandra node: 24 GB of data x RF 3 over 6 nodes."""
REDIS_WORKING_SET_GB = 10.0
"""Working set per Redis shard."""

CASSANDRA_CONFIGS = (
    # name, read factor, write factor, heap rule
    ("default", 1.00, 1.00, "default"),
    ("read-optimized", 1.25, 0.70, "default"),
    ("write-optimized", 0.70, 1.25, "large"),
    ("balanced", 1.08, 1.08, "default"),
)
CASSANDRA_READS_PER_VCPU = 2500.0
CASSANDRA_WRITES_PER_VCPU = 3000.0
MISS_COST = {"network": 4.0, "nvme": 1.5}
BURSTABLE_SHARE = 0.3

REDIS_MAXMEMORY = (0.5, 0.75, 0.9)
REDIS_POLICIES = (("allkeys-lfu", 0.4, 0.92), ("allkeys-lru", 0.5, 0.96), ("allkeys-random", 0.8, 1.0))
REDIS_CONFIGS = tuple(
    ("maxmemory %d%% %s" % (round(100 * share), policy), share, policy, exponent, upkeep)
    for share in REDIS_MAXMEMORY
    for policy, exponent, upkeep in REDIS_POLICIES
)
REDIS_NODE_OPS = 50000.0
REDIS_BACKEND_READS = 8000.0
REDIS_WRITE_HEADROOM = {0.5: 1.0, 0.75: 0.8, 0.9: 0.45}


def _mix(read_ratio, reads, writes):
    r = min(1.0, max(0.0, float(read_ratio)))
    if reads <= 0 or writes <= 0:
        return 0.0
    return 1.0 / (r / reads + (1.0 - r) / writes)


def cassandra_heap_gb(ram_gb, rule="default"):
    """The heap of a configuration on a machine: cassandra-env.sh's rule, or half the RAM up to 12 GiB."""
    if rule == "large":
        return min(12.0, ram_gb / 2.0)
    return max(min(ram_gb / 2.0, 1.0), min(ram_gb / 4.0, 8.0))


def sustained_vcpu(vm):
    return vm["vcpu"] * (BURSTABLE_SHARE if vm.get("family") == "burstable" else 1.0)


def cassandra_node_ops(vm, config, read_ratio, data_gb=CASSANDRA_DATA_GB):
    """One Cassandra node's ops/s (0 when the configuration does not fit the VM type's memory)."""
    _name, read_factor, write_factor, heap_rule = CASSANDRA_CONFIGS[config]
    ram = float(vm["ram_gb"])
    if heap_rule == "large" and ram < 8.0:
        return 0.0
    cache = max(0.0, ram - cassandra_heap_gb(ram, heap_rule) - 1.0)
    hit = min(1.0, cache / data_gb) if data_gb > 0 else 1.0
    miss = MISS_COST["nvme" if vm.get("family") == "storage" else "network"]
    cpus = sustained_vcpu(vm)
    reads = CASSANDRA_READS_PER_VCPU * cpus * read_factor / (1.0 + miss * (1.0 - hit))
    writes = CASSANDRA_WRITES_PER_VCPU * cpus * write_factor
    return _mix(read_ratio, reads, writes)


def redis_node_ops(vm, config, read_ratio, working_set_gb=REDIS_WORKING_SET_GB):
    """One Redis node's commands/s as a cache in front of a database."""
    _name, share, _policy, exponent, upkeep = REDIS_CONFIGS[config]
    speed = REDIS_NODE_OPS * upkeep * {"compute": 1.15, "burstable": 0.6}.get(vm.get("family"), 1.0)
    memory = share * float(vm["ram_gb"])
    hit = min(1.0, memory / working_set_gb) ** exponent if working_set_gb > 0 else 1.0
    reads = 1.0 / (1.0 / speed + (1.0 - hit) / REDIS_BACKEND_READS)
    writes = speed * REDIS_WRITE_HEADROOM[share]
    return _mix(read_ratio, reads, writes)


STORES = {
    "cassandra": {"configs": CASSANDRA_CONFIGS, "node_ops": cassandra_node_ops},
    "redis": {"configs": REDIS_CONFIGS, "node_ops": redis_node_ops},
}


def config_names(store):
    return [entry[0] for entry in STORES[store]["configs"]]


def node_ops_matrix(store, vms, read_ratio):
    """node_ops[v][c] of every VM type and configuration at one read ratio (vm_types.best_assignment's input)."""
    fn = STORES[store]["node_ops"]
    return [[fn(vm, c, read_ratio) for c in range(len(STORES[store]["configs"]))] for vm in vms]
