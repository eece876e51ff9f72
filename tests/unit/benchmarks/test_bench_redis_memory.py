# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""benchmarks/redis_memory.py without a server: memory sizes as Redis reads them, the seeded zipfian key stream, the
cache-aside batch on a fake connection (misses set, refused SETs counted), a window from two snapshots (the client's
and the server's counts compared), the designs' plan and summary, the Markdown table, the CPU split and the
command line's errors."""

from __future__ import annotations

import collections
import math
import os
import sys

import pytest
from testlib import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import redis_memory as bench

from ansible_collections.tactician.nosql.plugins.module_utils.stores.redis import client as redis_adapter


# ----------------------------------------------------------------------------------------------- sizes
@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("128mb", 128 * 1024**2),
        ("64MB", 64 * 1024**2),
        ("1gb", 1024**3),
        ("1k", 1000),
        ("1kb", 1024),
        ("2m", 2000000),
        ("4096", 4096),
        (" 3 mb ", 3 * 1024**2),
    ],
)
def test_memory_sizes_are_read_as_redis_reads_them(text, size):
    assert bench.memory_bytes(text) == size


@pytest.mark.parametrize("text", ["", "mb", "1.5mb", "-1mb", "10tb", "64 megabytes"])
def test_a_size_redis_would_refuse_is_an_error_that_says_what_is_allowed(text):
    with pytest.raises(ValueError, match="kb, m, mb, g or gb"):
        bench.memory_bytes(text)


def test_a_size_is_written_back_in_mb_when_it_is_a_whole_number_of_them():
    assert bench.memory_text(64 * 1024**2) == "64mb"
    assert bench.memory_text(1000) == "1000"


# ----------------------------------------------------------------------------------------------- key stream
def test_the_zipfian_stream_is_seeded_and_stays_in_range():
    first = bench.Zipfian(1000, 0.99, seed=7).draw(5000)
    assert first == bench.Zipfian(1000, 0.99, seed=7).draw(5000)
    assert first != bench.Zipfian(1000, 0.99, seed=8).draw(5000)
    assert min(first) == 0 and max(first) <= 999


def test_the_most_popular_ranks_are_drawn_as_often_as_the_distribution_says():
    n, theta, draws = 10000, 0.99, 200000
    zetan = bench.zeta(n, theta)
    counts = collections.Counter(bench.Zipfian(n, theta, seed=3, zetan=zetan).draw(draws))
    for rank in (0, 1):  # exact; the ranks after them follow Gray's approximation, as YCSB's do
        expected = draws / (rank + 1) ** theta / zetan
        assert abs(counts[rank] - expected) < 5 * math.sqrt(expected), rank
    for k in (10, 100, 1000):
        drawn = sum(counts[rank] for rank in range(k)) / draws
        assert drawn == pytest.approx(bench.top_share(k, n, theta, zetan), abs=0.03), k
    assert counts[0] > counts[1] > counts[9] > counts[999]


def test_the_zipfian_stream_refuses_what_its_formula_cannot_take():
    with pytest.raises(ValueError, match="theta"):
        bench.Zipfian(100, 1.0)
    with pytest.raises(ValueError, match="n:"):
        bench.Zipfian(1, 0.5)


def test_the_share_of_the_most_popular_keys_grows_to_one():
    n, theta = 5000, 0.99
    shares = [bench.top_share(k, n, theta) for k in (0, 1, 50, 500, 5000, 6000)]
    assert shares[0] == 0.0 and shares[-2] == pytest.approx(1.0) and shares[-1] == pytest.approx(1.0)
    assert shares == sorted(shares)
    assert shares[1] == pytest.approx(1.0 / bench.zeta(n, theta))


# ----------------------------------------------------------------------------------------------- cache-aside
class FakeConnection:
    """A server of capacity keys behind redis-py's connection calls the batch uses; past its capacity it refuses
    SETs as noeviction does (or, with fail_reads, the link drops on the next read)."""

    def __init__(self, capacity=None, fail_reads=False):
        self.data, self.replies, self.sent = {}, [], []
        self.capacity, self.fail_reads = capacity, fail_reads

    def pack_commands(self, commands):
        return list(commands)

    def send_packed_command(self, commands):
        for command in commands:
            self.sent.append(command[0])
            self.replies.append(self._run(command))

    def _run(self, command):
        if command[0] == "GET":
            return self.data.get(command[1])
        if self.capacity is not None and len(self.data) >= self.capacity:
            return bench.RESPONSE_ERROR("OOM command not allowed when used memory > 'maxmemory'.")
        self.data[command[1]] = command[2]
        return b"OK"

    def read_response(self, disable_decoding=False):
        assert disable_decoding  # the values come back as bytes, not decoded
        if self.fail_reads:
            raise redis_adapter.RedisConnectionError("Connection closed by server.")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_a_miss_is_set_and_then_hits():
    conn = FakeConnection()
    keys = [bench.key_name(r) for r in (1, 2, 1)]
    assert bench.cache_aside_batch(conn, keys, b"v" * 8) == (0, 3, 0, 0)  # the repeated key missed twice too
    assert conn.sent == ["GET"] * 3 + ["SET"] * 3 and conn.data == {b"key:1": b"v" * 8, b"key:2": b"v" * 8}
    assert bench.cache_aside_batch(conn, keys + [b"key:3"], b"v") == (3, 1, 0, 0)
    assert not conn.replies


def test_sets_refused_for_memory_are_counted_and_the_batch_goes_on():
    conn = FakeConnection(capacity=1)
    assert bench.cache_aside_batch(conn, [b"a", b"b", b"c"], b"v") == (0, 3, 2, 0)
    assert bench.cache_aside_batch(conn, [b"a", b"b"], b"v") == (1, 1, 1, 0)
    assert not conn.replies


def test_a_lost_connection_is_raised_not_counted():
    with pytest.raises(redis_adapter.RedisConnectionError):
        bench.cache_aside_batch(FakeConnection(fail_reads=True), [b"a"], b"v")


# ----------------------------------------------------------------------------------------------- windows
def snapshot(t, gets, hits, misses, server_hits, server_misses, cpu=1.0, server_cpu=10.0, evicted=0, keys=100):
    client = dict(zip(bench.FIELDS, [gets, hits, misses, misses, 0, 0, cpu], strict=True))
    return dict(
        t_held=t,
        t_released=t + 0.01,
        client=client,
        keyspace_hits=server_hits,
        keyspace_misses=server_misses,
        server_gets=server_hits + server_misses,
        evicted_keys=evicted,
        oom_errors=0,
        used_memory=64 * 1024**2,
        maxmemory=64 * 1024**2,
        keys=keys,
        server_cpu=server_cpu,
        main_cpu=0.5,
    )


def test_a_window_gives_rates_ratios_and_cpu_and_checks_the_counts():
    start = snapshot(100.0, 1000, 800, 200, 800, 200, cpu=2.0, server_cpu=5.0, evicted=50)
    end = snapshot(110.01, 101000, 90800, 10200, 90800, 10200, cpu=6.0, server_cpu=14.0, evicted=5050)
    record = bench.window_record("B", start, end)
    assert record["arm"] == "B" and record["seconds"] == 10.0
    assert record["ops_s"] == pytest.approx(10000.0)
    assert record["hit_ratio"] == pytest.approx(0.9) and record["server_hit_ratio"] == pytest.approx(0.9)
    assert record["counts_agree"]
    assert record["evicted_s"] == pytest.approx(500.0) and record["sets_s"] == pytest.approx(1000.0)
    assert record["node_cpu"] == pytest.approx(0.9) and record["client_cpu"] == pytest.approx(0.4)
    assert record["used_mib"] == pytest.approx(64.0)


def test_counts_that_differ_are_reported():
    start = snapshot(0.0, 0, 0, 0, 0, 0)
    end = snapshot(10.01, 100, 90, 10, 91, 10)
    record = bench.window_record("A", start, end)
    assert not record["counts_agree"] and record["server_hits"] == 91 and record["client_hits"] == 90


def test_a_full_cache_is_one_that_evicts_or_refuses():
    before = {"evicted_keys": 10, "oom_errors": 0}
    assert not bench.cache_full(before, dict(before))
    assert bench.cache_full(before, {"evicted_keys": 11, "oom_errors": 0})
    assert bench.cache_full(before, {"evicted_keys": 10, "oom_errors": 3})


def records(labels, ops, hits):
    return [
        {
            "arm": label,
            "ops_s": o,
            "hit_ratio": h,
            "server_hit_ratio": h,
            "counts_agree": True,
            "evicted_s": 100.0,
            "used_mib": 63.9,
            "keys": 55000,
            "set_errors_s": 0.0,
            "node_cpu": 0.5,
            "client_cpu": 0.98,
        }
        for label, o, h in zip(labels, ops, hits, strict=True)
    ]


def test_a_design_is_summed_up_by_pairs_blocks_and_arms():
    labels = ["A", "B", "B", "A", "A", "B", "B", "A"]
    ops = [100.0, 120.0, 121.0, 101.0, 99.0, 119.0, 122.0, 100.0]
    hits = [0.80, 0.85, 0.851, 0.801, 0.799, 0.849, 0.85, 0.80]
    out = bench.summarize_design(records(labels, ops, hits), keys=400000, theta=0.99)
    assert out["summary"]["n"] == 4 and out["summary"]["b_won"] == 4
    assert out["summary"]["ratio"] == pytest.approx(1.2, abs=0.02)
    assert out["summary_blocks"]["n"] == 2
    assert out["hit_summary"]["ratio"] == pytest.approx(0.85 / 0.80, abs=0.005)
    assert out["arms"]["A"]["hit_ratio"]["min"] == 0.799 and out["arms"]["B"]["hit_ratio"]["max"] == 0.851
    assert 0.8 < out["arms"]["A"]["top_share"] < 0.9  # 55,000 of 400,000 zipfian keys


def test_the_plan_runs_the_floor_first_then_every_candidate_against_the_reference():
    args = bench.parse_args(["--policies", "allkeys-lfu,noeviction"])
    designs = bench.plan(args)
    assert [(d["knob"], d["B"]) for d in designs] == [
        ("A/A", "128mb allkeys-lru"),
        ("maxmemory-policy", "allkeys-lfu"),
        ("maxmemory-policy", "noeviction"),
        ("maxmemory", "64mb"),
        ("maxmemory", "256mb"),
    ]
    reference = {"maxmemory": "128mb", "maxmemory-policy": "allkeys-lru"}
    assert all(d["configs"]["A"] == reference for d in designs)
    assert designs[0]["configs"]["B"] == reference
    assert designs[2]["configs"]["B"] == {"maxmemory": "128mb", "maxmemory-policy": "noeviction"}
    assert designs[4]["configs"]["B"] == {"maxmemory": "256mb", "maxmemory-policy": "allkeys-lru"}


def test_the_table_has_the_floor_the_verdicts_and_one_cell_per_column():
    labels = ["A", "B", "B", "A", "A", "B", "B", "A"]
    aa = records(labels, [100, 101, 99, 100, 100, 100, 101, 99], [0.8] * 8)
    lfu = records(labels, [100, 130, 131, 100, 99, 129, 130, 100], [0.8, 0.9, 0.9, 0.8] * 2)
    results = [
        dict(knob="A/A", A="128mb allkeys-lru", B="128mb allkeys-lru", window_s=30.0, windows=aa),
        dict(knob="maxmemory-policy", A="allkeys-lru", B="allkeys-lfu", window_s=30.0, windows=lfu),
    ]
    for row in results:
        row.update(bench.summarize_design(row["windows"]))
    text = bench.markdown(results, {"workload": "cache-aside", "lines": ["Redis 7"], "clients": 1})
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 4 and len({line.count("|") for line in table}) == 1
    assert "(the floor)" in table[2] and "B better" in table[3]
    assert "agree in 8 of 8 windows" in table[3]
    assert "Saturated: the client side" in text


def test_the_saturated_side_is_read_from_the_cpus():
    busy_server = [{"node_cpu": 0.97, "client_cpu": 0.3}]
    busy_client = [{"node_cpu": 0.4, "client_cpu": 1.9}]
    assert bench.bottleneck(busy_server, 1) == "the server"
    assert bench.bottleneck(busy_client, 2) == "the client side"
    assert bench.bottleneck(busy_client, 4) == "neither side"
    assert bench.bottleneck([], 1) == "not measured"
    together = [{"node_cpu": 0.3, "client_cpu": 0.65}]
    assert bench.bottleneck(together, 1, shared=True) == "the CPUs the server and the client side share"
    assert bench.bottleneck(together, 1) == "neither side"


# ----------------------------------------------------------------------------------------------- the server's files
def test_the_password_reaches_the_acl_file_only_as_its_hash():
    text = bench.acl_text("tactician", "s3cret")
    assert "s3cret" not in text and "user default off" in text
    assert "#" + __import__("hashlib").sha256(b"s3cret").hexdigest() in text
    settings = bench.server_settings("/n", "127.0.0.32", 6421, "128mb", "allkeys-lru")
    assert settings["bind"] == "127.0.0.32" and settings["port"] == "6421" and settings["save"] == ""
    assert settings["aclfile"] == "/n/users.acl" and "requirepass" not in settings


def test_a_password_is_generated_once_and_kept_private(tmp_path):
    path = str(tmp_path / "secrets" / "redis-password")
    first = bench.bench_password(path)
    assert len(first) == 24 and first.isalnum()
    assert bench.bench_password(path) == first
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_the_server_and_the_clients_get_cpus_of_their_own_unless_told_to_share():
    total = os.cpu_count() or 1
    client, server = bench.cpu_sets(None, allowed=set(range(total)))
    if total >= 2:
        assert server == set(range(total // 2, total)) and client == set(range(total // 2))
    else:
        assert server is None
    assert bench.cpu_sets("0", allowed={0}) == ({0}, {0})
    if total >= 2:
        assert bench.cpu_sets("0", allowed=set(range(total))) == (set(range(1, total)), {0})


# ----------------------------------------------------------------------------------------------- command line
def test_the_defaults_and_the_short_run():
    args = bench.parse_args([])
    assert (args.pairs, args.window_s, args.settle_s, args.keys, args.value_bytes) == (4, 30.0, 10.0, 400000, 1024)
    assert args.policies == ["allkeys-lfu", "allkeys-random"] and args.maxmemory_values == ["64mb", "256mb"]
    short = bench.parse_args(["--short", "--policy", "allkeys-lfu", "--maxmemory", "64MB", "--pairs", "3"])
    assert (short.pairs, short.window_s, short.settle_s) == (3, 10.0, 5.0)
    assert short.policies == ["allkeys-lru", "allkeys-random"] and short.maxmemory_values == ["32mb", "128mb"]
    none = bench.parse_args(["--policies", "none", "--maxmemory-values", "none"])
    assert none.policies == [] and none.maxmemory_values == []


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--policy", "volatile-lru"], ["--policy", "allkeys-lru, allkeys-lfu, allkeys-random, noeviction"]),
        (["--policies", "allkeys-lfu,volatile-ttl"], ["--policies", "'volatile-ttl'", "noeviction", "none"]),
        (["--policies", "allkeys-lru"], ["--policies", "the reference"]),
        (["--maxmemory", "lots"], ["--maxmemory", "kb, m, mb, g or gb"]),
        (["--maxmemory", "0"], ["--maxmemory", "at least 1mb"]),
        (["--maxmemory-values", "128mb"], ["--maxmemory-values", "differ from the reference 128mb"]),
        (["--maxmemory-values", "64mb,x"], ["--maxmemory-values", "'x'"]),
        (["--pairs", "0"], ["--pairs", "at least 1"]),
        (["--window-s", "0"], ["--window-s", "above 0"]),
        (["--zipf-theta", "1"], ["--zipf-theta", "between 0 and 1"]),
        (["--server-cpus", "0-99"], ["--server-cpus", "outside"]),
        (["--server-cpus", "fast"], ["--server-cpus", "upper-half"]),
        (["--clients", "0"], ["--clients", "at least 1"]),
    ],
)
def test_errors_name_the_option_and_what_is_allowed(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.parse_args(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    for word in words:
        assert word in error, error
