from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.tactician.nosql.plugins.lookup.history import history_lookup
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.history import (
    HISTORY_ENV,
    SQLiteHistory,
    config_id,
)
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import new_sample

NODE = "127.0.0.1:9042"
A = {"concurrent_reads": 32}
B = {"concurrent_reads": 64}


@pytest.fixture
def path(tmp_path):
    path = str(tmp_path / "history.sqlite3")
    with SQLiteHistory(path) as history:
        for index in range(15):
            time = 1000 + 30 * index
            history.add_sample(
                new_sample(
                    "cassandra",
                    "lab",
                    NODE,
                    time,
                    30,
                    {"read": float(index), "update": 1.0},
                    hit_ratio={"key_cache": 0.5},
                )
            )
        history.add_sample(new_sample("redis", "cache", "127.0.0.1:6381", 1000, 30, {"read": 99.0}))
        history.add_sample(new_sample("cassandra", "lab", "cluster", 1420, 30, {"read": 50.0}))
        history.record_config("lab", NODE, A, time=900, source="observed")
        history.record_config("lab", NODE, B, time=1100, source="plan", note="read-heavy")
        history.record_config("lab", NODE, A, time=1300, source="plan")
    return path


def test_last_n_samples_oldest_first(path):
    samples = history_lookup(["lab"], path=path, node=NODE)
    assert len(samples) == 10  # default last
    assert [s["ops_per_s"]["read"] for s in samples] == [float(i) for i in range(5, 15)]
    assert len(history_lookup(["lab"], path=path, node=NODE, last=3)) == 3
    assert len(history_lookup(["lab"], path=path, last=0)) == 16


def test_field_path(path):
    assert history_lookup(["lab"], path=path, node=NODE, last=3, field="ops_per_s.read") == [12.0, 13.0, 14.0]
    assert history_lookup(["lab"], path=path, node=NODE, last=1, field="hit_ratio.key_cache") == [0.5]
    with pytest.raises(AnsibleLookupError, match=r"field 'ops_per_s.reads': no 'ops_per_s.reads'; keys there: delete"):
        history_lookup(["lab"], path=path, field="ops_per_s.reads")


def test_filters(path):
    assert history_lookup(["lab"], path=path, node="cluster", field="throughput") == [50.0]
    assert history_lookup(["cache", "lab"], path=path, store="redis", field="node") == ["127.0.0.1:6381"]
    since = history_lookup(["lab"], path=path, node=NODE, since="1970-01-01T00:23:00Z", last=0, field="time")
    assert since == [1390.0, 1420.0]
    assert history_lookup(["lab"], path=path, node=NODE, since=1390, until="1390", field="time") == [1390.0]
    assert history_lookup(["lab"], path=path, window_s=5) == []


def test_several_clusters_in_term_order(path):
    nodes = history_lookup(["cache", "lab"], path=path, last=1, field="cluster")
    assert nodes == ["cache", "lab"]


def test_transitions(path):
    transitions = history_lookup(["lab"], path=path, kind="transitions")
    assert transitions == [
        {"time": 1100.0, "node": NODE, "from_config_id": config_id(A), "to_config_id": config_id(B)},
        {"time": 1300.0, "node": NODE, "from_config_id": config_id(B), "to_config_id": config_id(A)},
    ]
    assert history_lookup(["lab"], path=path, kind="transitions", last=1, field="to_config_id") == [config_id(A)]


def test_configs(path):
    configs = history_lookup(["lab"], path=path, kind="configs", last=0)
    assert [(c["time"], c["config"], c["source"]) for c in configs] == [
        (900.0, A, "observed"),
        (1100.0, B, "plan"),
        (1300.0, A, "plan"),
    ]
    assert history_lookup(["lab"], path=path, kind="configs", field="config.concurrent_reads") == [32, 64, 32]


def test_missing_file_is_a_clear_error_and_is_not_created(tmp_path):
    missing = str(tmp_path / "nowhere" / "history.sqlite3")
    with pytest.raises(AnsibleLookupError, match=r"history: the history file %s does not exist" % missing):
        history_lookup(["lab"], path=missing)
    with pytest.raises(AnsibleLookupError, match=r"does not exist"):
        history_lookup(["lab"], path="sqlite://" + missing)
    assert not os.path.exists(missing)
    assert not os.path.exists(os.path.dirname(missing))


def test_default_path_from_the_environment(path, monkeypatch):
    monkeypatch.setenv(HISTORY_ENV, path)
    assert history_lookup(["lab"], node=NODE, last=1, field="time") == [1420.0]


def test_bad_options(path):
    with pytest.raises(AnsibleLookupError, match=r"history: kind 'plan' is not known; allowed: samples, transitions"):
        history_lookup(["lab"], path=path, kind="plan")
    with pytest.raises(AnsibleLookupError, match=r"history: missing 'skip' is not known; allowed: error, empty"):
        history_lookup(["lab"], path=path, missing="skip")
    with pytest.raises(AnsibleLookupError, match=r"history: give at least one cluster name"):
        history_lookup([], path=path)
    with pytest.raises(AnsibleLookupError, match=r"history: last -2 is not a whole number"):
        history_lookup(["lab"], path=path, last=-2)
    with pytest.raises(AnsibleLookupError, match=r"history: since: 'soon' is not unix seconds or ISO 8601"):
        history_lookup(["lab"], path=path, since="soon")
    with pytest.raises(AnsibleLookupError, match=r"history: path: option 'foo' of prometheus:// is not known"):
        history_lookup(["lab"], path="prometheus://p:9090?foo=1")
