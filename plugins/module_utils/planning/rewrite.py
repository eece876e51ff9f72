# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The price of a switch that rewrites the data: a knob whose new value reaches only the SSTables written after it
(the catalog's ``rewrite: sstables``: Cassandra's sstable_format, a table's compression.chunk_length_in_kb) pays
only once every SSTable is rewritten (nodetool upgradesstables -a, or compactions), and the rewrite takes disk and
CPU from the clients while it runs.

    seconds a node  t = data bytes per node / rate
    rate            = min(rate_mib_s, the compaction throughput in place after the switch; 0 = unthrottled)
    ops lost        = loss x cluster ops/s before x t               (the rewrite)
                    + cluster ops/s before x roll down time         (the restart roll before it)
    break-even      = ops lost / (ops/s after - ops/s before)      (seconds of the gain that win the loss back)
    pays back after = roll + rewrite time + break-even              (from the start of the switch)

The roll down time counts the roll as cost_benefit.Roll lays it out: each batch is offline T_r seconds with its
share of the nodes, so it is the sum of T_r x batch / N over the batches (down_time()): T_r in all for a restart
roll, whatever the batch, and 0 for a live change. The nodes already restarted serve at the old throughput, since
their files are still the old ones (the dynamic planner's timeline counts a roll the same way, with the new
configuration's throughput on the switched nodes; a rewrite knob is never switched there, so nothing is counted
twice).

Node by node (the default) the rewrite takes N t and one node of N loses ``loss`` of its share at a time; all at
once it takes t and every node loses it: the same ops lost, over a shorter time. The price counts no gain before
the last node is rewritten (node by node, the nodes already rewritten gain earlier: the price errs long).

The defaults are the lab's measurements under YCSB B (docs/benchmarks.md, "Knob effects"): a rewrite of a 21 GB
table (chunk length 16 -> 4 KiB, upgradesstables -a) took 2,166 s while the node served (9.25 MiB/s, its one CPU
shared with the reads), and the reads fell from 2,059 to 1,411 ops/s meanwhile (0.31 of the throughput lost). A
rewrite with no clients runs at the compaction throttle: the bench node's 4.3 GB table took about 64 s at the
default 64 MiB/s. Set ``rate_mib_s`` and ``loss`` for your nodes.

A separate module from debt.py: a compaction debt is a backlog that grows and shrinks step by step and that the
dynamic program carries; a rewrite is a one-off price of one switch, closed-form, which the static planner needs
without a timeline.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

MIB = float(1 << 20)
MEASURED_RATE_MIB_S = 9.25
"""MiB/s a node rewrote while serving YCSB B: 21 GB in 2,166 s (the lab, 2026-11-27)."""
MEASURED_LOSS = 0.31
"""Share of the throughput lost while a node rewrites: 2,059 -> 1,411 ops/s during that rewrite."""
ORDERS = ("node_by_node", "all_at_once")
RECORD_BYTES = 1000.0
"""A workload's record size when it gives none (YCSB's 10 fields of 100 bytes, the surrogate's default)."""


SAMPLE_KEYS = ("data_bytes",)
"""Keys of an observed sample a workload may carry for the rewrite's price but the surrogate does not read."""


def modelled(workload):
    """The workload without the sample keys the surrogate does not read (SAMPLE_KEYS)."""
    return {k: v for k, v in workload.items() if k not in SAMPLE_KEYS}


class RewriteError(PlanningError, ValueError):
    """Bad rewrite settings; the message names the field and what is allowed."""


@dataclass(frozen=True)
class RewriteModel:
    """How a rewrite of the data is priced (see the module's docstring).

    data_bytes: bytes a node holds that the rewrite reads and writes (None: from the workload, see
    data_per_node()); rate_mib_s: what a node rewrites per second while it serves (the fallback when the compaction
    throughput in place is unthrottled or unknown, and its cap otherwise); loss: the share of the node's throughput
    lost while it rewrites; order: node_by_node or all_at_once; throttle: the parameter that throttles compaction
    (MiB/s, 0 = unthrottled), which bounds the rate."""

    data_bytes: float | None = None
    rate_mib_s: float = MEASURED_RATE_MIB_S
    loss: float = MEASURED_LOSS
    order: str = "node_by_node"
    throttle: str = "compaction_throughput"

    def __post_init__(self):
        if self.data_bytes is not None:
            checks.number("rewrite.data_bytes", self.data_bytes, RewriteError, minimum=0)
        checks.number("rewrite.rate_mib_s", self.rate_mib_s, RewriteError, above=0)
        checks.number("rewrite.loss", self.loss, RewriteError, minimum=0)
        if self.loss > 1:
            raise RewriteError("rewrite.loss: %r is not allowed; give a share in [0, 1]" % (self.loss,))
        if self.order not in ORDERS:
            raise RewriteError("rewrite.order: %r is not allowed; choose one of %s" % (self.order, ", ".join(ORDERS)))
        if not isinstance(self.throttle, str) or not self.throttle:
            raise RewriteError("rewrite.throttle: give the name of the parameter that throttles compaction")

    @classmethod
    def from_dict(cls, data):
        """A model from a mapping (None or {} = the defaults); unknown keys are refused by name."""
        return checks.options(cls, data, RewriteError, "rewrite")

    @classmethod
    def from_params(cls, params):
        """The model of the plan module's rewrite option, or None with enabled: false (a switch is then not
        priced for its rewrite)."""
        settings = dict(params.get("rewrite") or {})
        enabled = settings.pop("enabled", True)
        if not isinstance(enabled, bool):
            raise RewriteError("rewrite.enabled: %r is not allowed; choose true or false" % (enabled,))
        return cls.from_dict(settings) if enabled else None

    def to_dict(self):
        return asdict(self)

    def rate(self, config=None, catalog=None):
        """(bytes per second a node rewrites at, what bounds it): rate_mib_s, or the throttle in config (the
        configuration in place after the switch; the catalog's default when config has none) when lower."""
        value = (config or {}).get(self.throttle)
        if value is None and catalog is not None:
            try:
                value = catalog.entry(self.throttle).get("default")
            except CatalogError:  # a store without that parameter: no bound
                value = None
        try:
            throttle = float(value) if value is not None and not isinstance(value, bool) else 0.0
        except (TypeError, ValueError):
            throttle = 0.0
        if 0 < throttle < self.rate_mib_s:
            return throttle * MIB, "%g MiB/s (the %s in place)" % (throttle, self.throttle)
        return self.rate_mib_s * MIB, "%g MiB/s (rewrite.rate_mib_s)" % self.rate_mib_s

    def data_per_node(self, workload=None, nodes=1, rf=None):
        """(bytes a node holds, where the figure comes from), or (None, why not): data_bytes when given; else the
        workload's data_bytes (a sample's, observe's total over the cluster) over the nodes; else the data set the
        workload describes (records x record_bytes x the replicas a node holds, uncompressed); else None."""
        if self.data_bytes is not None:
            return float(self.data_bytes), "rewrite.data_bytes"
        workload = workload or {}
        nodes = max(1, int(nodes))
        total = workload.get("data_bytes")
        if total is not None:
            total = checks.number("workload.data_bytes", total, RewriteError, minimum=0)
            return total / nodes, "the workload sample's data_bytes over %d node%s" % (nodes, "" if nodes == 1 else "s")
        if workload.get("records") is not None:
            records = checks.number("workload.records", workload["records"], RewriteError, minimum=0)
            size = checks.number(
                "workload.record_bytes", workload.get("record_bytes", RECORD_BYTES), RewriteError, minimum=0
            )
            replicas = min(int(rf or 1), nodes)
            return (
                records * size * replicas / nodes,
                "the workload's records x record_bytes, %d replica%s over %d node%s, uncompressed"
                % (replicas, "" if replicas == 1 else "s", nodes, "" if nodes == 1 else "s"),
            )
        return None, "the data a node holds is not known: give rewrite.data_bytes (bytes per node)"


def rewritten(catalog, names):
    """{name: what a switch of it rewrites} of the names whose catalog entry has rewrite."""
    out = {}
    for name in names:
        kind = catalog.rewrite(name)
        if kind:
            out[name] = kind
    return out


def down_time(roll, restart=True):
    """Seconds of the whole cluster's throughput a roll (cost_benefit.Roll) takes offline: each batch's time down x
    the share of the nodes in it (Roll.layout), summed; restart_s for a restart roll, 0 for a live change."""
    return sum((end - start) * max(0.0, 1.0 - old - new) for start, end, old, new in roll.layout(restart))


def price(
    data_bytes,
    rate_bytes_s,
    loss,
    ops_per_s_before,
    ops_per_s_after,
    nodes=1,
    order="node_by_node",
    roll_s=0.0,
    roll_down_s=0.0,
):
    """The price of rewriting data_bytes per node at rate_bytes_s after a roll of roll_s seconds that takes
    roll_down_s seconds of the cluster's throughput offline (down_time(); see the module's docstring):
    {seconds_per_node, seconds, rewrite_ops_lost, roll_ops_lost, ops_lost (both), gain_ops_per_s, break_even_s (ops
    lost / gain; None without a gain), pays_back_s (roll_s + seconds + break_even_s, from the start of the switch;
    None without a gain), ...}."""
    data_bytes = checks.number("data_bytes", data_bytes, RewriteError, minimum=0)
    rate_bytes_s = checks.number("rate", rate_bytes_s, RewriteError, above=0)
    loss = checks.number("loss", loss, RewriteError, minimum=0)
    before = checks.number("ops_per_s_before", ops_per_s_before, RewriteError, minimum=0)
    after = checks.number("ops_per_s_after", ops_per_s_after, RewriteError, minimum=0)
    nodes = checks.whole("nodes", nodes, RewriteError)
    roll_s = checks.number("roll_s", roll_s, RewriteError, minimum=0)
    roll_down_s = checks.number("roll_down_s", roll_down_s, RewriteError, minimum=0)
    if roll_down_s > roll_s * (1 + 1e-9):
        raise RewriteError("roll_down_s: %r is more than the roll's %r seconds" % (roll_down_s, roll_s))
    if order not in ORDERS:
        raise RewriteError("order: %r is not allowed; choose one of %s" % (order, ", ".join(ORDERS)))
    per_node = data_bytes / rate_bytes_s
    seconds = per_node * (nodes if order == "node_by_node" else 1)
    # Node by node, 1/N of the cluster loses `loss` for N t; all at once, all of it for t: the same ops.
    rewrite_lost = loss * before * per_node
    # The restart roll before it: the nodes down serve nothing, the restarted ones still the old throughput.
    roll_lost = before * roll_down_s
    lost = rewrite_lost + roll_lost
    gain = after - before
    even = lost / gain if gain > 0 else None
    return {
        "data_bytes_per_node": round(data_bytes, 1),
        "rate_mib_s": round(rate_bytes_s / MIB, 3),
        "order": order,
        "nodes": nodes,
        "seconds_per_node": round(per_node, 1),
        "seconds": round(seconds, 1),
        "loss": loss,
        "roll_s": round(roll_s, 1),
        "roll_down_s": round(roll_down_s, 1),
        "rewrite_ops_lost": round(rewrite_lost, 1),
        "roll_ops_lost": round(roll_lost, 1),
        "ops_lost": round(lost, 1),
        "gain_ops_per_s": round(gain, 1),
        "break_even_s": None if even is None else round(even, 1),
        "pays_back_s": None if even is None else round(roll_s + seconds + even, 1),
    }


def duration(seconds):
    """Seconds as a person reads them (90 s, 7 min 23 s)."""
    seconds = int(round(seconds))
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        minutes, rest = divmod(seconds, 60)
        return "%d min %02d s" % (minutes, rest) if rest else "%d min" % minutes
    hours, rest = divmod(seconds, 3600)
    return "%d h %02d min" % (hours, rest // 60)


def describe(names, cost, source, bound):
    """One sentence on a rewrite's price (cost: price()'s result; source: where the data size came from; bound:
    what bounds the rate)."""
    text = "switching %s rewrites every SSTable: %.1f GB a node (from %s) at %s takes %s a node" % (
        ", ".join(sorted(names)),
        cost["data_bytes_per_node"] / 1e9,
        source,
        bound,
        duration(cost["seconds_per_node"]),
    )
    if cost["order"] == "node_by_node" and cost["nodes"] > 1:
        text += ", node by node %s in all" % duration(cost["seconds"])
    if cost.get("roll_ops_lost"):
        text += (
            ", losing %s ops (%s while the nodes restart, %s at %.0f %% of the throughput while a node rewrites)"
            % (
                f"{cost['ops_lost']:,.0f}",
                f"{cost['roll_ops_lost']:,.0f}",
                f"{cost['rewrite_ops_lost']:,.0f}",
                100.0 * cost["loss"],
            )
        )
    else:
        text += ", losing %s ops (%.0f %% of the throughput while a node rewrites)" % (
            f"{cost['ops_lost']:,.0f}",
            100.0 * cost["loss"],
        )
    if cost["break_even_s"] is None:
        return text + "; with no predicted gain it never pays back"
    return text + "; the gain (%s ops/s) wins that back in %s, so the switch pays back %s after it starts" % (
        f"{cost['gain_ops_per_s']:+,.0f}",
        duration(cost["break_even_s"]),
        duration(cost["pays_back_s"]),
    )
