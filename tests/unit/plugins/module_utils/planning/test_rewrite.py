# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The price of a switch that rewrites the data (planning/rewrite.py): the arithmetic, a static plan that prices a
big -> bti switch or refuses it when it does not pay back, the dynamic plan's reason, and the catalog field."""

from __future__ import annotations

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core import catalog_files
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError
from ansible_collections.tactician.nosql.plugins.module_utils.models import surrogate_design
from ansible_collections.tactician.nosql.plugins.module_utils.models.surrogate_features import FeatureSpace
from ansible_collections.tactician.nosql.plugins.module_utils.planning import dynamic, modes, static, tuner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.planning import rewrite as rw
from ansible_collections.tactician.nosql.plugins.module_utils.planning.cost_benefit import Roll

MIB = 1 << 20
GB = 1e9
B = {"mix": {"read": 0.95, "update": 0.05}, "requestdistribution": "zipfian"}
BIG, BTI = 1392.0, 1716.0  # the bench node on YCSB B, disk reads capped: +23 % in BTI files


@pytest.fixture(scope="module")
def catalog():
    return Catalog.for_store("cassandra")


@pytest.fixture(scope="module")
def space(catalog):
    return FeatureSpace(
        catalog,
        ["sstable_format", "concurrent_reads", "compaction_throughput"],
        ranges={"concurrent_reads": [16, 64], "compaction_throughput": [1, 128]},
    )


def _bench(reads_matter=False):
    """The bench node's B: the BTI format +23 %; concurrent_reads 64 +5 % when reads_matter, nothing else counts."""

    def fn(_workload, config):
        ops = BTI if config["sstable_format"] == "bti" else BIG
        if reads_matter and config["concurrent_reads"] >= 48:
            ops *= 1.05
        return ops

    return fn


def _plan(space, catalog, workload, reads_matter=False, nodes=1, **kwargs):
    f_ops = tuner.FunctionThroughput(_bench(reads_matter), space=space)
    current = space.complete({"compaction_throughput": 64})
    kwargs.setdefault("rewrite", rw.RewriteModel())
    return static.make_plan(f_ops, workload, current, Roll(nodes, 1, 40.0), catalog, generations=8, **kwargs)


# ------------------------------------------------------------------------------------------------ arithmetic
def test_the_price_of_the_bench_nodes_bti_rewrite_by_hand():
    cost = rw.price(4.3 * GB, 9.25 * MIB, 0.31, BIG, BTI, nodes=1, roll_s=40.0, roll_down_s=40.0)
    seconds = 4.3e9 / (9.25 * MIB)
    assert cost["seconds_per_node"] == pytest.approx(seconds, abs=0.1) == pytest.approx(443.3, abs=0.1)
    assert cost["rewrite_ops_lost"] == pytest.approx(0.31 * BIG * seconds, abs=0.1)
    assert cost["roll_ops_lost"] == BIG * 40.0  # the one node down for its 40 s restart
    assert cost["ops_lost"] == pytest.approx(0.31 * BIG * seconds + BIG * 40.0, abs=0.1)
    assert cost["gain_ops_per_s"] == pytest.approx(324.0)
    assert cost["break_even_s"] == pytest.approx((0.31 * BIG * seconds + BIG * 40.0) / 324.0, abs=0.1)
    assert cost["break_even_s"] == pytest.approx(762.3, abs=0.1)
    assert cost["pays_back_s"] == pytest.approx(40.0 + seconds + cost["break_even_s"], abs=0.2)
    # With no clients the rewrite ran at the 64 MiB/s throttle: about 64 s, as measured.
    assert rw.price(4.3 * GB, 64 * MIB, 0.31, BIG, BTI)["seconds"] == pytest.approx(64.1, abs=0.1)


def test_the_measured_chunk_rewrite_is_what_the_defaults_give():
    # 21 GB rewritten in 2,166 s at 2,059 ops/s, 1.40 million ops lost; the twin tables' +23.8 % gain.
    model = rw.RewriteModel()
    rate, bound = model.rate({"compaction_throughput": 64})
    assert rate == 9.25 * MIB and "rewrite.rate_mib_s" in bound
    cost = rw.price(21 * GB, rate, model.loss, 2059.0, 2059.0 * 1.238)
    assert cost["seconds"] == pytest.approx(2166, rel=0.01)
    assert cost["ops_lost"] == pytest.approx(1.40e6, rel=0.02)
    assert 45 * 60 < cost["break_even_s"] < 50 * 60  # "about 50 minutes of B to win back"


def test_the_restart_roll_loses_its_nodes_share_while_they_are_down():
    # Each batch is down restart_s with its share of the nodes (cost_benefit.Roll.layout): T_r of the whole
    # cluster's throughput in all, whatever the batch; a live change takes no node down.
    assert rw.down_time(Roll(1, 1, 40.0)) == 40.0
    assert rw.down_time(Roll(3, 1, 40.0)) == pytest.approx(40.0)
    assert rw.down_time(Roll(6, 2, 70.0)) == pytest.approx(70.0)
    assert rw.down_time(Roll(3, 1, 40.0, live_s=15.0), restart=False) == 0.0
    roll = Roll(3, 1, 40.0)
    cost = rw.price(4.3 * GB, 9.25 * MIB, 0.31, 3 * BIG, 3 * BTI, 3, "node_by_node", 120.0, rw.down_time(roll))
    assert cost["roll_ops_lost"] == pytest.approx(3 * BIG * 40.0, abs=0.1)
    assert cost["ops_lost"] == pytest.approx(cost["rewrite_ops_lost"] + cost["roll_ops_lost"], abs=0.1)
    assert cost["break_even_s"] == pytest.approx(cost["ops_lost"] / (3 * 324.0), abs=0.1)
    assert cost["pays_back_s"] == pytest.approx(120.0 + cost["seconds"] + cost["break_even_s"], abs=0.2)
    text = rw.describe(["sstable_format"], cost, "rewrite.data_bytes", "9.25 MiB/s (rewrite.rate_mib_s)")
    assert "losing 740,957 ops (167,040 while the nodes restart, 573,917 at 31 % of the throughput" in text
    # Without a roll down time (a live change, or a caller that gives none) the price is the rewrite's alone.
    alone = rw.price(4.3 * GB, 9.25 * MIB, 0.31, 3 * BIG, 3 * BTI, 3, "node_by_node", 120.0)
    assert alone["roll_ops_lost"] == 0.0 and alone["ops_lost"] == cost["rewrite_ops_lost"]
    assert "while the nodes restart" not in rw.describe(["sstable_format"], alone, "x", "y")
    with pytest.raises(rw.RewriteError, match=r"^roll_down_s: 50\.0 is more than the roll's 40\.0 seconds$"):
        rw.price(GB, MIB, 0.3, 1.0, 2.0, roll_s=40.0, roll_down_s=50.0)


def test_node_by_node_takes_longer_and_loses_the_same():
    one = rw.price(10 * GB, 10 * MIB, 0.3, 3000.0, 3600.0, nodes=3, order="node_by_node")
    all_ = rw.price(10 * GB, 10 * MIB, 0.3, 3000.0, 3600.0, nodes=3, order="all_at_once")
    assert one["seconds"] == pytest.approx(3 * all_["seconds"], abs=0.2)
    assert one["seconds_per_node"] == all_["seconds_per_node"]
    assert one["ops_lost"] == all_["ops_lost"]
    assert one["pays_back_s"] > all_["pays_back_s"]
    # No gain: it never pays back.
    none = rw.price(10 * GB, 10 * MIB, 0.3, 3000.0, 3000.0)
    assert none["break_even_s"] is None and none["pays_back_s"] is None


def test_the_rate_is_bounded_by_the_compaction_throughput_in_place(catalog):
    model = rw.RewriteModel()
    assert model.rate({"compaction_throughput": 4})[0] == 4 * MIB
    assert "compaction_throughput in place" in model.rate({"compaction_throughput": 4})[1]
    assert model.rate({"compaction_throughput": 0})[0] == 9.25 * MIB  # unthrottled: the measured rate
    assert model.rate({}, catalog)[0] == 9.25 * MIB  # the catalog's default, 64 MiB/s, is above it
    assert rw.RewriteModel(rate_mib_s=100).rate({}, catalog)[0] == 64 * MIB


def test_the_data_a_node_holds_comes_from_the_option_the_sample_or_the_records():
    model = rw.RewriteModel()
    assert model.data_per_node({"data_bytes": 9 * GB}, nodes=3)[0] == 3 * GB
    assert "sample" in model.data_per_node({"data_bytes": 9 * GB}, nodes=3)[1]
    assert rw.RewriteModel(data_bytes=2 * GB).data_per_node({"data_bytes": 9 * GB}, nodes=3) == (
        2 * GB,
        "rewrite.data_bytes",
    )
    size, source = model.data_per_node({"records": 3_000_000, "record_bytes": 1000}, nodes=6, rf=3)
    assert size == 1.5 * GB and "uncompressed" in source
    size, source = model.data_per_node({"mix": {"read": 1.0}}, nodes=3)
    assert size is None and "rewrite.data_bytes" in source


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"loss": 1.5}, r"^rewrite\.loss: 1\.5 is not allowed; give a share in \[0, 1\]$"),
        ({"rate_mib_s": 0}, r"^rewrite\.rate_mib_s: 0 must be greater than 0$"),
        (
            {"order": "sideways"},
            r"^rewrite\.order: 'sideways' is not allowed; choose one of node_by_node, all_at_once$",
        ),
        ({"speed": 3}, r"^rewrite\.speed: not an option; allowed: data_bytes, rate_mib_s, loss, order, throttle$"),
    ],
)
def test_bad_rewrite_settings_are_refused_by_name(settings, message):
    with pytest.raises(rw.RewriteError, match=message):
        rw.RewriteModel.from_dict(settings)


# ------------------------------------------------------------------------------------------------ static plans
def test_a_static_plan_prices_its_switch_to_bti(space, catalog):
    body = _plan(space, catalog, dict(B, data_bytes=int(4.3 * GB)))
    (step,) = body["steps"]
    assert step["configuration"]["sstable_format"] == "bti" and step["restart"] is True
    price = step["predicted"]["rewrite"]
    assert price["parameters"] == ["sstable_format"]
    assert price["seconds"] == pytest.approx(443.3, abs=0.1)
    assert step["predicted"]["cost_ops"] == price["ops_lost"] > 0
    assert price["roll_ops_lost"] == BIG * 40.0 and price["roll_s"] == 40.0
    assert step["predicted"]["break_even_s"] == price["break_even_s"] == pytest.approx(762.3, abs=1.0)
    assert price["pays_back_s"] == pytest.approx(40.0 + 443.3 + 762.3, abs=1.0)
    assert step["predicted"]["gain_ops"] > 0 and step["predicted"]["kept_s"] == 1800.0
    assert "rewrites every SSTable" in step["reason"] and "pays back 20 min 46 s after it starts" in step["reason"]
    assert "55,680 while the nodes restart" in step["reason"]
    assert any("within the horizon of 30 min" in r for r in body["reasons"])
    # The plan file takes the price as it is.
    doc = planfile.build(body, "cassandra", 1_800_000_000, "5.0.9", {"cl": "ONE", "nodes": 1}, {"file": "m.json"})
    assert doc["steps"][0]["predicted"]["rewrite"]["ops_lost"] == price["ops_lost"]


def test_a_switch_that_does_not_pay_back_within_the_horizon_is_not_planned(space, catalog):
    # 21 GB a node: 36 min of rewriting, 48 min of the gain to win it back; the horizon is 30 min.
    body = _plan(space, catalog, dict(B, data_bytes=int(21 * GB)))
    assert body["steps"] == []
    assert "not planned: it does not pay back within the horizon of 30 min" in body["reasons"][0]
    assert body["reasons"][-1] == (
        "keeping sstable_format as it is, the configuration in place is predicted best for this workload"
    )
    # What pays without a rewrite is still planned, and the reason says what was left out.
    body = _plan(space, catalog, dict(B, data_bytes=int(21 * GB)), reads_matter=True)
    (step,) = body["steps"]
    assert "sstable_format" not in step["configuration"] and step["configuration"]["concurrent_reads"] >= 48
    assert "rewrite" not in step["predicted"] and "not planned" in step["reason"]
    # Kept for a day, the same rewrite pays.
    body = _plan(space, catalog, dict(B, data_bytes=int(21 * GB)), horizon_s=86400.0)
    assert body["steps"][0]["configuration"]["sstable_format"] == "bti"


def test_a_rewrite_of_unknown_size_is_not_planned_and_the_reason_says_what_to_give(space, catalog):
    body = _plan(space, catalog, B)
    assert body["steps"] == []
    assert "its price is unknown" in body["reasons"][0] and "rewrite.data_bytes" in body["reasons"][0]
    # Not priced at all (rewrite: {enabled: false}), the switch is planned as before.
    body = _plan(space, catalog, B, rewrite=None)
    assert body["steps"][0]["configuration"]["sstable_format"] == "bti"
    assert "rewrite" not in body["steps"][0]["predicted"]


def test_a_switch_to_bti_needs_the_storage_compatibility_mode_in_place(space, catalog):
    # The catalog's feasibility rule reads the mode from the configuration in place (it is not a tuned
    # parameter): on a node in the default CASSANDRA_4 mode, which refuses BTI files, bti is never chosen.
    workload = dict(B, data_bytes=int(4.3 * GB))
    body = _plan(space, catalog, workload, feasible=surrogate_design.feasible_by_catalog(catalog))
    assert body["steps"] == []
    in_place = {"compaction_throughput": 64, "storage_compatibility_mode": "NONE"}
    feasible = surrogate_design.feasible_by_catalog(catalog, in_place=in_place)
    assert feasible(space.complete({"sstable_format": "bti"}))[0]
    (step,) = _plan(space, catalog, workload, feasible=feasible)["steps"]
    assert step["configuration"]["sstable_format"] == "bti"
    assert "storage_compatibility_mode" not in step["configuration"]  # in place already
    # The space's own catalog (a model file's) carries the rule and the entry it reads.
    subset = FeatureSpace.from_dict(space.to_dict()).catalog
    assert "storage_compatibility_mode" in subset.names()
    assert not surrogate_design.feasible_by_catalog(subset)(space.complete({"sstable_format": "bti"}))[0]


def test_the_plan_modules_options_reach_the_static_mode():
    options = static.StaticOptions.from_params(
        dict(modes.PARAM_DEFAULTS, workload=B, rewrite={"data_bytes": 1e9, "order": "all_at_once"}, horizon=600)
    )
    assert options.horizon_s == 600.0
    assert options.rewrite == rw.RewriteModel(data_bytes=1e9, order="all_at_once")
    assert (
        static.StaticOptions.from_params(dict(modes.PARAM_DEFAULTS, workload=B, rewrite={"enabled": False})).rewrite
        is None
    )
    with pytest.raises(rw.RewriteError, match=r"^rewrite\.enabled: 'no' is not allowed; choose true or false$"):
        static.StaticOptions.from_params(dict(modes.PARAM_DEFAULTS, workload=B, rewrite={"enabled": "no"}))
    with pytest.raises(PlanningError, match=r"^horizon: "):
        static.make_plan(None, B, {}, Roll(1, 1, 40.0), None, horizon_s=0)


# ------------------------------------------------------------------------------------------------ dynamic plans
def test_a_dynamic_plan_keeps_the_rewrite_knobs_and_gives_their_price(space, catalog):
    f_ops = tuner.FunctionThroughput(_bench(reads_matter=True), space=space)
    f_ops.hardware = None
    forecast = {"fields": {"read_ratio": [0.95] * 10}}
    base = {"requestdistribution": "zipfian", "data_bytes": int(12.9 * GB)}
    body = dynamic.make_plan(
        f_ops,
        forecast,
        {"compaction_throughput": 64},
        Roll(3, 1, 40.0),
        catalog,
        workload_base=base,
        rewrite=rw.RewriteModel(),
    )
    assert body["fixed"]["sstable_format"] == "big"
    assert all("sstable_format" not in step["configuration"] for step in body["steps"])
    (reason,) = [r for r in body["reasons"] if r.startswith("left out of the search")]
    assert "sstable_format (a switch rewrites every SSTable: 7 min 23 s a node at 9.25 MiB/s" in reason
    assert "22 min 10 s in all" in reason and "4.3 GB a node from the workload sample's data_bytes" in reason
    assert "of them while the nodes restart)" in reason  # sstable_format is a restart: the roll's share of the ops
    # Without a size, the reason says what the price needs.
    body = dynamic.make_plan(f_ops, forecast, {}, Roll(3, 1, 40.0), catalog, rewrite=rw.RewriteModel())
    assert any("its price needs the data a node holds: rewrite.data_bytes" in r for r in body["reasons"])


# ------------------------------------------------------------------------------------------------ the catalog
def test_the_catalog_marks_the_knobs_that_rewrite_the_data(catalog):
    assert rw.rewritten(catalog, catalog.names()) == {
        "sstable_format": "sstables",
        "compression.chunk_length_in_kb": "sstables",
    }
    assert catalog.rewrite("concurrent_reads") is None


def test_a_bad_rewrite_in_the_catalog_is_refused_naming_the_field_and_the_allowed_values(catalog):
    data = catalog.to_dict()
    for entry in data["parameters"]:
        if entry["name"] == "sstable_format":
            entry["rewrite"] = "everything"
    with pytest.raises(CatalogError) as err:
        Catalog(data)
    assert "sstable_format: rewrite 'everything' is not one of sstables" in err.value.problems
    with pytest.raises(CatalogError) as err:
        catalog_files.validate_catalog_schema(data)
    assert "[sstable_format].rewrite" in str(err.value) and "sstables" in str(err.value)


def test_a_chunk_length_switch_is_a_table_change_priced_without_a_restart_roll(catalog):
    # ALTER TABLE restarts no node: the rewrite is priced, the roll loses nothing.
    chunks = FeatureSpace(
        catalog,
        ["compression.chunk_length_in_kb", "concurrent_reads"],
        ranges={"concurrent_reads": [16, 64], "compression.chunk_length_in_kb": [4, 32]},
    )

    def fn(_workload, config):
        return BTI if config["compression.chunk_length_in_kb"] <= 8 else BIG

    current = chunks.complete({})
    body = static.make_plan(
        tuner.FunctionThroughput(fn, space=chunks),
        dict(B, data_bytes=int(4.3 * GB)),
        current,
        Roll(1, 1, 40.0),
        catalog,
        generations=8,
        rewrite=rw.RewriteModel(),
    )
    (step,) = body["steps"]
    assert step["configuration"]["compression.chunk_length_in_kb"] <= 8 and step["restart"] is False
    assert step["predicted"]["rewrite"]["roll_ops_lost"] == 0


def _restart_plan(catalog, gain_share, **kwargs):
    """A space of one restart knob (memtable_flush_writers, +gain_share at 4 and above) and one live knob
    (concurrent_reads, +1 % at 48 and above), planned with a 40 s restart per node."""
    knobs = FeatureSpace(
        catalog,
        ["memtable_flush_writers", "concurrent_reads"],
        ranges={"memtable_flush_writers": [1, 8], "concurrent_reads": [16, 64]},
    )

    def fn(_workload, config):
        ops = BIG * (1 + gain_share if config["memtable_flush_writers"] >= 4 else 1.0)
        return ops * (1.01 if config["concurrent_reads"] >= 48 else 1.0)

    current = knobs.complete({"memtable_flush_writers": 2})
    f_ops = tuner.FunctionThroughput(fn, space=knobs)
    return static.make_plan(f_ops, B, current, Roll(3, 1, 40.0), catalog, generations=8, **kwargs)


def test_a_restart_switch_carries_the_ops_its_roll_loses(catalog):
    (step,) = _restart_plan(catalog, 0.20)["steps"]
    assert step["restart"] is True and step["configuration"]["memtable_flush_writers"] >= 4
    # Three nodes down 40 s each, a third of the cluster at a time: 40 s of the whole cluster's throughput.
    assert step["predicted"]["cost_ops"] == pytest.approx(BIG * 40.0, rel=1e-3)
    assert step["predicted"]["break_even_s"] > 0 and step["predicted"]["gain_ops"] > 0
    assert "a roll of restarts loses about" in step["reason"]


def test_a_restart_switch_that_does_not_pay_back_within_the_horizon_leaves_the_restart_knobs(catalog):
    # About +4 % in all wins back the roll's 40 s of the cluster's throughput after about 17 min: within the default
    # horizon of 30 min, not within 10 min.
    body = _restart_plan(catalog, 0.03, horizon_s=600.0)
    (step,) = body["steps"]
    assert "memtable_flush_writers" not in step["configuration"] and step["restart"] is False
    assert step["configuration"]["concurrent_reads"] >= 48 and step["predicted"]["cost_ops"] == 0.0
    assert "not planned: it does not pay back within the horizon of 10 min" in step["reason"]
    assert _restart_plan(catalog, 0.03)["steps"][0]["restart"] is True


def test_a_configuration_in_place_that_fails_the_feasibility_rule_is_refused(space, catalog):
    # BTI files without their storage compatibility mode: the default, CASSANDRA_4, fails the catalog's rule.
    current = space.complete({"sstable_format": "bti"})
    f_ops = tuner.FunctionThroughput(_bench(), space=space)
    feasible = surrogate_design.feasible_by_catalog(catalog, in_place=current)
    with pytest.raises(PlanningError, match=r"^current: the configuration in place does not pass the feasibility"):
        static.make_plan(
            f_ops, dict(B, data_bytes=int(4.3 * GB)), current, Roll(1, 1, 40.0), catalog, feasible=feasible
        )
