from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import prometheus
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import (
    HistoryError,
    PrometheusHistory,
    open_history,
)
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.operations import redis_operation
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import validate_sample

NODES = ("127.0.0.1:9042", "127.0.0.2:9042")


class FakeServer:
    """Answers the HTTP API from series given per metric name: {name: [(labels, value or f(t))]}: a query's answer
    is the series of the name found first in it (the longest of those found at the same place), each evaluated at
    every step."""

    def __init__(self, series, fail=None):
        self.series = series
        self.queries = []
        self.fail = fail

    def open(self, url, timeout=None):
        parts = urllib.parse.urlsplit(url)
        params = dict(urllib.parse.parse_qsl(parts.query))
        self.queries.append((parts.path, params))
        if self.fail:
            raise self.fail
        if parts.path == "/api/v1/targets":
            return io.BytesIO(json.dumps({"status": "success", "data": {"activeTargets": []}}).encode())
        query = params["query"]
        found = sorted((query.index(n), -len(n), n) for n in self.series if n in query)
        name = found[0][2] if found else None
        rows = []
        if parts.path == "/api/v1/query_range":
            start, end, step = float(params["start"]), float(params["end"]), float(params["step"].rstrip("s"))
            times = [start + k * step for k in range(int(round((end - start) / step)) + 1)]
            for labels, value in self.series.get(name, []):
                values = [[t, str(value(t) if callable(value) else value)] for t in times]
                values = [pair for pair in values if pair[1] != "None"]
                rows.append({"metric": labels, "values": values})
        return io.BytesIO(json.dumps({"status": "success", "data": {"result": rows}}).encode())


def _cassandra_series():
    series = {}
    for i, node in enumerate(NODES):
        base = {"node": node, "cluster": "lab"}
        series.setdefault("ops_by_op", [])
        series.setdefault("sum by (node, op) (rate(tactician_cassandra_coordinator_requests_total", []).extend(
            [
                (dict(base, op="read"), 300.0 * (i + 1)),
                (dict(base, op="write"), 100.0),
                (dict(base, op="scan"), 0.0),
            ]
        )
        series.setdefault("tactician_cassandra_coordinator_latency_microseconds", []).extend(
            [
                (dict(base, op="read", quantile="0.99"), 2500.0 * (i + 1)),
                (dict(base, op="write", quantile="0.5"), 400.0),
            ]
        )
        series.setdefault("rate(tactician_cassandra_cache_hits_total", []).append((dict(base, cache="key"), 90.0))
        series.setdefault("rate(tactician_cassandra_cache_requests_total", []).append((dict(base, cache="key"), 100.0))
        series.setdefault("tactician_cassandra_cache_size_bytes", []).append((dict(base, cache="key"), 0.25))
        series.setdefault("tactician_cassandra_live_disk_bytes", []).append((base, 1e9))
        series.setdefault("tactician_cassandra_compaction_executor_pending_tasks", []).append((base, 3.0))
        series.setdefault("max by (node) (tactician_cassandra_pending_compactions", []).append((base, 7.0))
        series.setdefault("tactician_cassandra_pending_flushes", []).append((base, 1.0))
        series.setdefault("tactician_cassandra_sstables_per_read%s" % "{", []).append((base, 2.0 + i))
        series.setdefault("process_cpu_seconds_total", []).append((base, 0.5))
    series.pop("ops_by_op")
    series['node_cpu_seconds_total{mode="idle"'] = [({"machine": "lab-host"}, 75.0)]
    series["max by (machine) (node_memory_MemTotal_bytes"] = [({"machine": "lab-host"}, 4e9)]
    return series


def _reader(series, **kwargs):
    server = FakeServer(series)
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    return prometheus.PrometheusSamples(client, step_s=30, **kwargs), server


def test_grid_is_on_multiples_of_the_step():
    assert prometheus.grid(100, 190, 30) == [120, 150, 180]
    assert prometheus.grid(120, 120, 30) == [120]
    assert prometheus.grid(121, 149, 30) == []


def test_cassandra_samples_per_node_and_for_the_cluster():
    reader, server = _reader(_cassandra_series())
    found = reader.read("cassandra", "lab", 1000, 1060)
    assert [s["time"] for s in found] == [1020.0] * 3 + [1050.0] * 3
    first, second, cluster = found[:3]
    for sample in found:
        validate_sample(sample)
        assert sample["extra"]["source"] == "prometheus"
    assert first["node"] == NODES[0] and cluster["node"] == "cluster"
    assert first["ops_per_s"]["read"] == 300.0 and first["ops_per_s"]["update"] == 100.0
    assert first["read_ratio"] == pytest.approx(0.75)
    assert cluster["ops_per_s"]["read"] == 900.0 and cluster["throughput"] == 1100.0
    assert first["latency_ms"]["read"]["p99"] == 2.5 and first["latency_ms"]["update"]["p50"] == 0.4
    assert cluster["latency_ms"]["read"]["p99"] == 5.0
    assert first["hit_ratio"]["key_cache"] == pytest.approx(0.9) and first["hit_ratio"]["row_cache"] is None
    assert cluster["hit_ratio"]["key_cache"] == pytest.approx(0.9)
    assert first["data_bytes"] == 10**9 and cluster["data_bytes"] == 2 * 10**9
    assert first["state"]["pending_compactions"] == 3 and first["state"]["pending_compactions_estimated"] == 7
    assert second["state"]["sstables_per_read"] == 3.0 and cluster["state"]["sstables_per_read"] == 3.0
    assert cluster["state"]["pending_compactions"] == 6
    assert first["resources"]["cpu_pct"] == pytest.approx(75.0) and first["resources"]["mem_bytes"] == 4 * 10**9
    assert first["extra"]["process_cpu_pct"] == pytest.approx(50.0)
    # every query asked the cluster's series only, at the step, over the whole window in one range query
    ranges = [p for path, p in server.queries if path == "/api/v1/query_range"]
    assert all(p["start"] == "1020.000" and p["end"] == "1050.000" and p["step"] == "30.000" for p in ranges)
    assert all('cluster="lab"' in p["query"] for p in ranges if "node_" not in p["query"])
    assert all('keyspace!~"system|system_.*"' in p["query"] for p in ranges if "coordinator_requests" in p["query"])


def test_a_step_no_node_was_scraped_at_is_left_out():
    series = _cassandra_series()
    key = "sum by (node, op) (rate(tactician_cassandra_coordinator_requests_total"
    series[key] = [(labels, (lambda t, v=value: None if t == 1020 else v)) for labels, value in series[key]]
    reader, _server = _reader(series)
    assert {s["time"] for s in reader.read("cassandra", "lab", 1000, 1060)} == {1050.0}


def test_redis_commands_map_onto_operations_and_replicas_do_not_count():
    base = {"cluster": "cache"}
    series = {
        "redis_commands_total": [
            (dict(base, node="127.0.0.1:6381", cmd="get"), 800.0),
            (dict(base, node="127.0.0.1:6381", cmd="set"), 200.0),
            (dict(base, node="127.0.0.1:6381", cmd="config|get"), 1.0),
            (dict(base, node="127.0.0.1:6384", cmd="set"), 200.0),
        ],
        "redis_keyspace_hits_total": [(dict(base, node="127.0.0.1:6381"), 600.0)],
        "redis_keyspace_misses_total": [(dict(base, node="127.0.0.1:6381"), 200.0)],
        "redis_instance_info": [
            (dict(base, node="127.0.0.1:6381", role="master"), 1.0),
            (dict(base, node="127.0.0.1:6384", role="slave"), 1.0),
        ],
        "redis_evicted_keys_total": [(dict(base, node="127.0.0.1:6381"), 4.0)],
    }
    reader, _server = _reader(series)
    master, replica, cluster = reader.read("redis", "cache", 1, 30)
    assert master["ops_per_s"] == {
        "read": 800.0,
        "update": 200.0,
        "insert": 0.0,
        "scan": 0.0,
        "delete": 0.0,
        "other": 1.0,
    }
    assert master["hit_ratio"]["keyspace"] == pytest.approx(0.75)
    assert master["state"]["evictions_per_s"] == 4.0
    assert replica["extra"]["counted_in_aggregate"] is False
    assert cluster["throughput"] == 1001.0 and cluster["extra"]["nodes"] == ["127.0.0.1:6381"]
    assert cluster["hit_ratio"]["keyspace"] == pytest.approx(0.75)


def test_redis_operation_names():
    assert redis_operation("GET") == "read"
    assert redis_operation("hset") == "update"
    assert redis_operation("client|setinfo") == "other"
    assert redis_operation("nonsense") == "other"


def test_errors_name_the_server_the_query_or_the_field():
    reader, _server = _reader({})
    with pytest.raises(prometheus.PrometheusError, match=r"^store: 'mongodb' cannot be read from Prometheus"):
        reader.read("mongodb", "lab", 0, 30)
    with pytest.raises(prometheus.PrometheusError, match=r"^step: 0 is not a number of seconds above 0"):
        prometheus.PrometheusSamples(reader.client, step_s=0)
    down = FakeServer({}, fail=urllib.error.URLError("connection refused"))
    client = prometheus.PrometheusClient("http://127.0.0.1:1", opener=down)
    with pytest.raises(prometheus.PrometheusError, match=r"^http://127.0.0.1:1: cannot be reached: connection refused"):
        client.query("up")
    body = io.BytesIO(json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode())
    bad = FakeServer({}, fail=urllib.error.HTTPError("http://x", 400, "Bad Request", {}, body))
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=bad)
    with pytest.raises(prometheus.PrometheusError, match=r"bad_data: parse error \(query up\(\)"):
        client.query("up(")
    with pytest.raises(prometheus.PrometheusError, match=r"^url: 'ftp://x' is not http"):
        prometheus.PrometheusClient("ftp://x")


def test_long_spans_are_read_in_pieces():
    server = FakeServer({"up": [({"node": "a"}, 1.0)]})
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    rows = client.query_range("up", 0, 30 * 25000, 30)
    assert len(server.queries) == 3
    assert len(rows) == 1 and len(rows[0]["values"]) == 25001


def test_prometheus_history_reads_samples_and_keeps_the_rest_in_its_records(tmp_path):
    server = FakeServer(_cassandra_series())
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    url = "prometheus://127.0.0.1:9390?records=%s&step=30" % urllib.parse.quote(str(tmp_path / "r.sqlite3"))
    with open_history(url, client=client, clock=lambda: 1065.0) as history:
        assert isinstance(history, PrometheusHistory)
        newest = history.samples(store="cassandra", cluster="lab", node="cluster", last=1)
        assert [s["time"] for s in newest] == [1050.0]
        both = history.samples(store="cassandra", cluster="lab", node=NODES[1], since=1000)
        assert [s["time"] for s in both] == [1020.0, 1050.0]
        config_id = history.record_config("lab", "cluster", {"compaction_throughput": "64MiB/s"}, time=1000)
        assert history.config_at("lab", NODES[0], time=1050)["config_id"] == config_id
        history.save_state("k", {"a": 1})
        assert history.load_state("k") == {"a": 1}
        with pytest.raises(HistoryError, match=r"^cluster: a Prometheus history reads one cluster at a time"):
            history.samples(store="cassandra")
    with open_history(str(tmp_path / "r.sqlite3")) as records:
        assert records.config_log("lab")[0]["config_id"] == config_id


@pytest.mark.parametrize(
    "url, message",
    [
        ("prometheus://127.0.0.1:9390?foo=1", r"^path: option 'foo' of prometheus:// is not known; allowed: records"),
        ("prometheus://127.0.0.1:9390?step=0", r"^path: option step=0.0 must be above 0 seconds"),
        ("prometheus://127.0.0.1:9390?step=x", r"^path: option step='x' is not a number of seconds"),
        ("prometheus://u:p@127.0.0.1:9390", r"^path: a user or password in prometheus would reach logs"),
        ("prometheus:///x", r"^path: 'prometheus:///x' names no host"),
        ("prometheus://h:1?records=prometheus://h:2", r"^path: option records='prometheus://h:2' must be a SQL"),
        ("prometheus://h:1?validate_certs=maybe", r"^path: option validate_certs='maybe' is not true or false"),
    ],
)
def test_bad_prometheus_urls_name_the_option(tmp_path, monkeypatch, url, message):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(HistoryError, match=message):
        open_history(url)


def test_window_reads_the_window_that_ends_now_off_the_grid(tmp_path):
    server = FakeServer(_cassandra_series())
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    history = PrometheusHistory("prometheus://127.0.0.1:9390", client=client, clock=lambda: 1047.5)
    result = history.window("cassandra", "lab", 20)
    assert [s["node"] for s in result["samples"]] == list(NODES)
    assert result["aggregate"]["node"] == "cluster" and result["aggregate"]["time"] == 1047.5
    assert result["aggregate"]["window_s"] == 20.0
    ranges = [p for path, p in server.queries if path == "/api/v1/query_range"]
    assert all(p["start"] == p["end"] == "1047.500" for p in ranges)
    assert any("[20000ms]" in p["query"] for p in ranges)
    history.close()  # no records were needed, none were opened
    assert not (tmp_path / "r.sqlite3").exists()
    empty = PrometheusHistory(
        "prometheus://127.0.0.1:9390",
        client=prometheus.PrometheusClient("http://127.0.0.1:9390", opener=FakeServer({})),
        clock=lambda: 1047.5,
    )
    with pytest.raises(
        HistoryError, match=r"^cluster: http://127.0.0.1:9390 holds no cassandra series of cluster 'lab'"
    ):
        empty.window("cassandra", "lab", 20)


class InstantServer(FakeServer):
    """Instant queries: the series of the name found first, at the query's time."""

    def open(self, url, timeout=None):
        parts = urllib.parse.urlsplit(url)
        params = dict(urllib.parse.parse_qsl(parts.query))
        self.queries.append((parts.path, params))
        if self.fail:
            raise self.fail
        query = params["query"]
        found = sorted((query.index(n), -len(n), n) for n in self.series if n in query)
        rows = [
            {"metric": labels, "value": [1000.0, str(value)]}
            for labels, value in (self.series.get(found[0][2], []) if found else [])
        ]
        return io.BytesIO(json.dumps({"status": "success", "data": {"result": rows}}).encode())


def test_client_signals_of_cassandra_nodes_from_the_coordinators_series():
    server = InstantServer(
        {
            "sum by (node) (rate(tactician_cassandra_client_requests_total": [
                ({"node": NODES[0]}, 500.0),
                ({"node": NODES[1]}, 0.0),
            ],
            "tactician_cassandra_client_request_errors_total": [({"node": NODES[0]}, 5.0)],
            "tactician_cassandra_client_request_latency_microseconds": [({"node": NODES[0]}, 12500.0)],
        }
    )
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    found = prometheus.client_signals(client, "cassandra", "lab", nodes=[NODES[0], NODES[1], "127.0.0.3:9042"])
    assert found[NODES[0]] == dict(p99_ms=12.5, ops_per_s=500.0, errors_per_s=5.0, via="prometheus")
    assert found[NODES[1]]["p99_ms"] is None and found[NODES[1]]["errors_per_s"] is None
    assert found["127.0.0.3:9042"] == {"error": "no series of this node in Prometheus over the last 60 s"}
    queries = [p["query"] for _path, p in server.queries]
    assert all('cluster="lab"' in q and "[60000ms]" in q for q in queries)


def test_client_signals_of_redis_nodes_leave_redirections_out():
    node = "127.0.0.1:6381"
    server = InstantServer(
        {
            "sum by (node) (rate(redis_commands_total": [({"node": node}, 1000.0)],
            "redis_commands_duration_seconds_total": [({"node": node}, 0.05)],
            "redis_commands_failed_calls_total": [({"node": node}, 12.0)],
            "redis_commands_rejected_calls_total": [({"node": node}, 1.0)],
            "redis_errors_total": [({"node": node}, 10.0)],
        }
    )
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    found = prometheus.client_signals(client, "redis", "cache")
    assert found == {node: dict(p99_ms=0.05, ops_per_s=1000.0, errors_per_s=3.0, via="prometheus")}
    with pytest.raises(prometheus.PrometheusError, match=r"^store: 'mongodb' has no client signals in Prometheus"):
        prometheus.client_signals(client, "mongodb", "x")


@pytest.mark.parametrize(
    "url, base, options",
    [
        ("prometheus://127.0.0.1:9390", "http://127.0.0.1:9390", {}),
        (
            "prometheus+https://p.example:9090/prom/?ca_file=/ca.pem",
            "https://p.example:9090/prom",
            {"ca_file": "/ca.pem"},
        ),
        ("http://127.0.0.1:9390?timeout=5", "http://127.0.0.1:9390", {"timeout": 5.0}),
        ("prometheus://h:1?validate_certs=no&step=15", "http://h:1", {"validate_certs": False, "step": 15.0}),
    ],
)
def test_parse_url(url, base, options):
    assert prometheus.parse_url(url) == (base, options)


def test_parse_url_refuses_other_schemes_by_field():
    with pytest.raises(prometheus.PrometheusError, match=r"^guard_prometheus.url: 'redis://h:1' is not prometheus://"):
        prometheus.client_from_url("redis://h:1", "guard_prometheus.url")


@pytest.mark.parametrize(
    "text, seconds", [("5s", 5.0), ("1m30s", 90.0), ("250ms", 0.25), ("2h", 7200.0), ("", None), ("5x", None)]
)
def test_duration_seconds(text, seconds):
    assert prometheus.duration_seconds(text) == seconds


def test_a_window_shorter_than_two_scrapes_is_read_over_two_scrapes():
    class Targets(FakeServer):
        def open(self, url, timeout=None):
            if urllib.parse.urlsplit(url).path == "/api/v1/targets":
                targets = [
                    {"labels": {"cluster": "lab"}, "scrapeInterval": "5s"},
                    {"labels": {}, "scrapeInterval": "1m"},
                ]
                return io.BytesIO(json.dumps({"status": "success", "data": {"activeTargets": targets}}).encode())
            return super().open(url, timeout)

    server = Targets(_cassandra_series())
    client = prometheus.PrometheusClient("http://127.0.0.1:9390", opener=server)
    history = PrometheusHistory("prometheus://127.0.0.1:9390", client=client, clock=lambda: 1047.5)
    result = history.window("cassandra", "lab", 3.3)
    assert result["aggregate"]["window_s"] == 3.3 and result["samples"][0]["extra"]["window_s"] == 11.0
    ranges = [p for path, p in server.queries if path == "/api/v1/query_range"]
    assert any("[11000ms]" in p["query"] for p in ranges)


def test_records_not_created_yet_read_as_empty_when_opened_read_only(tmp_path):
    url = "prometheus://127.0.0.1:9390?records=%s" % urllib.parse.quote(str(tmp_path / "none.sqlite3"))
    with open_history(url, create=False, readonly=True) as history:
        assert history.load_state("effect/lab") is None and history.states("effect/") == []
        assert history.config_log("lab") == [] and history.transitions("lab") == []
        with pytest.raises(HistoryError, match=r"^path: the records history .*none.sqlite3 does not exist"):
            history.save_state("k", {})
    assert not (tmp_path / "none.sqlite3").exists()
