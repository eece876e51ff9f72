from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun
from ansible_collections.tactician.nosql.plugins.module_utils.workload import loaddriver

OUTPUT = """[OVERALL], RunTime(ms), 10000
[OVERALL], Throughput(ops/sec), 5123.4
[TOTAL_GCS_PS_Scavenge], Count, 12
[READ], Operations, 48000
[READ], AverageLatency(us), 812.5
[READ], MinLatency(us), 120
[READ], MaxLatency(us), 41000
[READ], 50thPercentileLatency(us), 700
[READ], 95thPercentileLatency(us), 1500
[READ], 99thPercentileLatency(us), 3100
[READ], 99.9PercentileLatency(us), 9000
[READ], Return=OK, 47990
[READ], Return=ERROR, 10
[UPDATE], Operations, 2000
[UPDATE], AverageLatency(us), 900.0
[UPDATE], 99thPercentileLatency(us), 4000
[UPDATE], Return=OK, 2000
[READ-FAILED], Operations, 10
[CLEANUP], Operations, 32
[SERVER-COMMANDS], Operations, 50123
"""


def test_parse_output_reads_throughput_percentiles_and_failures():
    result = loaddriver.parse_output(OUTPUT)
    assert result["throughput"] == 5123.4 and result["runtime_ms"] == 10000
    read = result["operations"]["read"]
    assert read["count"] == 48000
    assert (read["p50_ms"], read["p95_ms"], read["p99_ms"], read["p999_ms"]) == (0.7, 1.5, 3.1, 9.0)
    assert read["returns"] == {"OK": 47990, "ERROR": 10}
    assert result["failed"] == {"read": 10}
    assert "cleanup" not in result["operations"] and "total_gcs_ps_scavenge" not in result["operations"]
    assert result["server_commands"] == 50123 and "server-commands" not in result["operations"]


def test_reads_that_found_no_row_are_counted_apart_from_failures():
    text = OUTPUT.replace(
        "[READ-FAILED], Operations, 10\n",
        "[READ-FAILED], Operations, 25\n[READ-FAILED], Return=ERROR, 10\n[READ-FAILED], Return=NOT_FOUND, 15\n",
    )
    result = loaddriver.parse_output(text)
    assert result["failed"] == {"read": 10} and result["not_found"] == {"read": 15}
    only_missing = loaddriver.parse_output(
        OUTPUT.replace("[READ], Return=ERROR, 10\n", "").replace(
            "[READ-FAILED], Operations, 10\n", "[READ-FAILED], Operations, 7\n[READ-FAILED], Return=NOT_FOUND, 7\n"
        )
    )
    assert only_missing["failed"] == {} and only_missing["not_found"] == {"read": 7}
    merged = loaddriver.merge([result, only_missing])
    assert merged["failed"] == {"read": 10} and merged["not_found"] == {"read": 22}


def test_ycsb_reports_rows_not_found_under_the_operation_not_as_failures():
    # YCSB's own form: the status under [READ], the latency of every read that was not OK under [READ-FAILED].
    text = OUTPUT.replace("[READ], Return=ERROR, 10\n", "[READ], Return=NOT_FOUND, 10\n")
    result = loaddriver.parse_output(text)
    assert result["failed"] == {} and result["not_found"] == {"read": 10}


def test_status_lines_tell_when_operations_failed():
    text = (
        "2026-11-26 10:00:10:000 10 sec: 35000 operations; 3500 current ops/sec; [INSERT: Count=35000, Max=9]\n"
        "2026-11-26 10:00:20:500 20 sec: 70000 operations; 3500 current ops/sec; [INSERT: Count=34998, Max=9] "
        "[INSERT-FAILED: Count=2, Max=2001000, Min=2000000]\n"
        "[INSERT-FAILED], Operations, 2\n"
    )
    points = loaddriver.parse_failures(text)
    assert len(points) == 1 and points[0][1] == 2
    assert points[0][0] - loaddriver.parse_status(text)[0][0] == pytest.approx(10.5)


def test_status_lines_give_the_p99_of_each_interval():
    text = (
        "2026-11-26 10:00:10:000 10 sec: 35000 operations; 3500 current ops/sec; [READ: Count=30000, Max=9000, "
        "Min=100, Avg=500.5, 90=800, 99=2100, 99.9=5000, 99.99=8000] [UPDATE: Count=5000, Max=9000, Min=100, "
        "Avg=600, 90=900, 99=3300, 99.9=6000, 99.99=8000] [CLEANUP: Count=0, Max=0]\n"
        "2026-11-26 10:00:20:000 20 sec: 70000 operations; 3500 current ops/sec; [READ: Count=30000, Max=9000, "
        "Min=100, Avg=500.5, 90=800, 99=1500, 99.9=5000, 99.99=8000] [READ-FAILED: Count=2, Max=2001000, "
        "Min=2000000, Avg=2000500, 90=2001000, 99=2001000, 99.9=2001000, 99.99=2001000]\n"
    )
    points = loaddriver.parse_p99(text)
    assert [latency for _at, latency in points] == [{"read": 2.1, "update": 3.3}, {"read": 1.5}]
    first, second = points[0][0], points[1][0]
    assert loaddriver.worst_p99(points, first - 1, second) == 3.3
    assert loaddriver.worst_p99(points, first, second) == 1.5
    assert loaddriver.worst_p99(points, second, second + 10) is None


def test_split_for_processes_partitions_keys_operations_threads_and_target():
    props = {"recordcount": "100", "operationcount": "1001", "threadcount": "5", "target": "900"}
    loads = loaddriver.split_for_processes(props, "load", 3)
    assert [(p["insertstart"], p["insertcount"]) for p in loads] == [("0", "33"), ("33", "33"), ("66", "34")]
    runs = loaddriver.split_for_processes(props, "run", 3)
    assert sum(int(p["operationcount"]) for p in runs) == 1001
    assert sum(int(p["threadcount"]) for p in runs) == 5
    assert all(p["target"] == "300" for p in runs)


def test_merge_adds_counts_and_keeps_worst_percentile():
    one = loaddriver.parse_output(OUTPUT)
    two = loaddriver.parse_output(OUTPUT.replace("99.9PercentileLatency(us), 9000", "99.9PercentileLatency(us), 12000"))
    merged = loaddriver.merge([one, two])
    assert merged["throughput"] == pytest.approx(2 * 5123.4)
    assert merged["operations"]["read"]["count"] == 96000
    assert merged["operations"]["read"]["p999_ms"] == 12.0
    assert merged["failed"] == {"read": 20}
    assert merged["server_commands"] == 2 * 50123


def test_properties_file_is_private_and_escaped(tmp_path):
    path = str(tmp_path / "c.properties")
    loaddriver.write_properties(path, {"cassandra.password": "a=b:c", "redis.nodes": "127.0.0.1:6381"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = open(path).read()
    assert "cassandra.password=a\\=b\\:c" in text


def test_secrets_are_redacted_from_client_errors():
    assert "s3cret" not in loaddriver._redact("Exception: cassandra.password=s3cret bad")


def test_client_argv_needs_an_installed_driver(tmp_path):
    with pytest.raises(loaddriver.LoadDriverError, match="^driver_home:"):
        loaddriver.client_argv("java", str(tmp_path), "cassandra", "run", "/p")


def test_base_properties_ask_for_hdr_percentiles():
    props = loaddriver.base_properties({"recordcount": 10, "readallfields": True}, threads=8, target=100)
    assert props["measurementtype"] == "hdrhistogram"
    assert props["hdrhistogram.percentiles"] == "50,95,99,99.9"
    assert props["readallfields"] == "true" and props["target"] == "100" and props["threadcount"] == "8"


BASE = dict(store="cassandra", hosts=["127.0.0.1"], threads=8, processes=1, target=0, workload="e", phases=["run"])


def test_plan_reports_mix_and_read_ratio():
    plan = loadrun.plan(dict(BASE))
    assert plan["workload"] == "E" and plan["mix"]["scan"] == pytest.approx(0.95)
    assert plan["read_ratio"] == pytest.approx(0.95)
    assert "cassandra.password" not in plan["properties"]


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(store="scylla"), "store"),
        (dict(hosts=[]), "hosts"),
        (dict(threads=0), "threads"),
        (dict(target=-1), "target"),
        (dict(properties={"requestdistribution": "gaussian"}), "requestdistribution"),
        (dict(phases=["warm"]), "phases"),
    ],
)
def test_plan_errors_name_the_field(change, field):
    with pytest.raises(TacticianError) as err:  # the load run's own error, or the workload spec's
        loadrun.plan(dict(BASE, **change))
    assert str(err.value).startswith(field + ":")


def test_redis_scan_index_only_for_workloads_with_scans():
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

    params = dict(BASE, store="redis", hosts=["127.0.0.1:6381"], login_user="u", login_password="p")
    assert loadrun._store_properties(params, ycsb.workload("c"))["redis.scanindex"] is False
    assert loadrun._store_properties(params, ycsb.workload("e"))["redis.scanindex"] is True


@pytest.mark.parametrize(
    "store, hosts, prefix",
    [
        ("cassandra", ["127.0.0.1"], "cassandra.ssl"),
        ("redis", ["127.0.0.1:6381"], "redis.tls"),
        ("mongodb", ["127.0.0.1:27017"], "mongodb.tls"),
    ],
)
def test_tls_gives_the_driver_the_ca_the_client_certificate_and_the_hostname_check(store, hosts, prefix):
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

    params = dict(
        BASE,
        store=store,
        hosts=hosts,
        tls=True,
        ca_file="/pki/ca.pem",
        client_cert_file="/pki/client.pem",
        client_key_file="/pki/client-key.pem",
        validate_certs=True,
        check_hostname=True,
    )
    props = loadrun._store_properties(params, ycsb.workload("c"))
    assert props[prefix + ".cafile"] == "/pki/ca.pem"
    assert props[prefix + ".certfile"] == "/pki/client.pem" and props[prefix + ".keyfile"] == "/pki/client-key.pem"
    assert props[prefix + ".validate"] is True and props[prefix + ".checkhostname"] is True
    # the operator's explicit opt-out is passed on, never the default
    unchecked = loadrun._store_properties(dict(params, check_hostname=False), ycsb.workload("c"))
    assert unchecked[prefix + ".checkhostname"] is False
    plain = loadrun._store_properties(dict(params, tls=False), ycsb.workload("c"))
    assert not [key for key in plain if key.startswith(prefix + ".")]
    if store == "mongodb":
        # MongoDB's one PEM file (certificate and key), as its adapter takes it: the binding reads the key there too
        one_file = loadrun._store_properties(dict(params, client_key_file=None), ycsb.workload("c"))
        assert one_file[prefix + ".certfile"] == one_file[prefix + ".keyfile"] == "/pki/client.pem"
    else:
        with pytest.raises(TacticianError, match="^client_cert_file and client_key_file go together"):
            loadrun._store_properties(dict(params, client_key_file=None), ycsb.workload("c"))


def test_schedule_replay_runs_each_phase_with_its_mix_rate_and_duration(monkeypatch, tmp_path):
    from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules

    path = str(tmp_path / "switch.yml")
    schedules.save_schedule(
        schedules.abrupt_switching(3, duration_s=60, min_interval_s=10, max_interval_s=25, rate=500), path
    )
    calls = []

    def fake_run(java, home, store, phase, props, **kwargs):
        calls.append((phase, dict(props)))
        return {"throughput": 1.0, "failed": {}, "failed_total": 0, "operations": {}}

    monkeypatch.setattr(loadrun.loaddriver, "run", fake_run)
    monkeypatch.setattr(loadrun, "prepare", lambda *args: None)
    params = dict(
        BASE,
        store="redis",
        hosts=["127.0.0.1:6381"],
        workload="a",
        phases=["load", "run"],
        properties={"recordcount": 100},
        schedule=path,
        driver_home="/d",
    )
    the_plan = loadrun.plan(params)
    schedule = loadrun.load_schedule(params)
    results = loadrun.execute_schedule(params, the_plan, schedule)
    assert [phase for phase, _props in calls] == ["load"] + ["run"] * len(schedule.phases)
    assert "target" not in calls[0][1]
    for (_phase, props), expected in zip(calls[1:], schedule.phases, strict=True):
        assert props["target"] == "500"
        assert props["maxexecutiontime"] == str(int(-(-expected.duration_s // 1)))
        assert float(props["readproportion"]) == expected.mix.get("read", 0.0)
        assert props["redis.scanindex"] == "false"
    assert [r["read_ratio"] for r in results[1:]] == [p.read_ratio for p in schedule.phases]


def test_bad_schedule_file_names_the_field(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("version: 1\nseed: 0\nphases:\n  - duration_s: 10\n    mix: {reed: 1.0}\n    rate: 5\n")
    with pytest.raises(loadrun.LoadError, match=r"^schedule: phases\[0\]\.mix"):
        loadrun.load_schedule({"schedule": str(path)})


def test_loadrun_defaults_are_completed_by_what_is_given():
    from ansible_collections.tactician.nosql.plugins.module_utils.trials import load_run as loadrun

    params = loadrun.with_defaults(store="cassandra", hosts=["127.0.0.1"], threads=8)
    assert params["threads"] == 8 and params["keyspace"] == "ycsb" and params["target"] == 0
    assert (
        params["server_pid_files"] == []
        and loadrun.with_defaults()["server_pid_files"] is not params["server_pid_files"]
    )


def test_stop_clients_ends_a_run_waiting_in_another_thread(monkeypatch, tmp_path):
    # A client that would run for a minute: a caller interrupted meanwhile ends it rather than leave it behind.
    monkeypatch.setattr(loaddriver, "client_argv", lambda *args: ["sleep", "60"])
    outcome = {}

    def client():
        try:
            loaddriver.run("java", str(tmp_path), "cassandra", "run", {"operationcount": "1"}, workdir=str(tmp_path))
        except loaddriver.LoadDriverError as exc:
            outcome["error"] = str(exc)

    thread = threading.Thread(target=client)
    thread.start()
    for _attempt in range(500):
        with loaddriver._RUNNING_LOCK:
            procs = list(loaddriver._RUNNING)
        if procs:
            break
        time.sleep(0.01)
    assert len(procs) == 1
    assert loaddriver.stop_clients() == 1
    thread.join(30)
    assert not thread.is_alive()
    assert "YCSB client failed" in outcome["error"]
    assert procs[0].poll() is not None
    assert not loaddriver._RUNNING
    assert os.listdir(tmp_path) == []


def test_a_timed_run_with_inserts_keeps_the_key_space_of_ycsb_in_a_java_int():
    assert loaddriver.key_space_bound(4_000_000, 0.0) == loadrun.UNBOUNDED_OPERATIONS
    for share in (0.05, 0.5, 0.95, 1.0):
        count = loaddriver.key_space_bound(4_000_000, share)
        assert 4_000_000 + int(count * share * 2.0) < 2**31 - 1
        assert count > 10**9 // 2
    assert loaddriver.key_space_bound(2**31, 0.95) == 1
    # The driver bounds a timed run's count where it splits it over the client processes.
    props = {"recordcount": "4000000", "operationcount": str(loadrun.UNBOUNDED_OPERATIONS), "insertproportion": "0.95"}
    parts = loaddriver.split_for_processes(props, "run", 2)
    total = sum(int(p["operationcount"]) for p in parts)
    assert total == loaddriver.key_space_bound(4_000_000, 0.95)
    reads = dict(props, insertproportion="0")
    assert sum(int(p["operationcount"]) for p in loaddriver.split_for_processes(reads, "run", 2)) == 2**31 - 1


def test_a_binding_that_could_not_connect_is_named_not_reported_as_an_empty_run():
    text = (
        "site.ycsb.DBException: cannot connect to the Redis cluster: Could not initialize cluster slots cache.\n"
        "\tat tactician.ycsb.RedisClusterDB.init(RedisClusterDB.java:86)\n[OVERALL], RunTime(ms), 12\n"
    )
    assert (
        loaddriver.init_failure(text)
        == "cannot connect to the Redis cluster: Could not initialize cluster slots cache."
    )
    assert loaddriver.init_failure("[OVERALL], RunTime(ms), 3000\n[READ], Operations, 10\n") is None
