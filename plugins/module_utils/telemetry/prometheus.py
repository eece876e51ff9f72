# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Workload samples read from a Prometheus server: the ``prometheus://`` history.

Operators already scrape their stores with exporters. This reader turns those series into the same
``tactician.workload_sample/v1`` samples that observe builds by polling, one per node and one for the cluster at
every step of ``step_s`` seconds (T_d) over any window, with range queries, so a forecast runs on a dense history
with no step filled in.

What it reads (the exporters and their labels: docs/monitoring.md; every field and its query: docs/observe.md):

- Cassandra, through the Prometheus JMX exporter agent with the collection's rules
  (roles/cassandra_node/files/jmx_exporter.yml): ``tactician_cassandra_*`` series and the JVM's
  ``process_cpu_seconds_total``;
- Redis, through the Redis exporter: ``redis_commands_total`` per command (mapped by
  operations.REDIS_COMMAND_OPERATIONS), keyspace hits and misses, memory, persistence, CPU;
- each machine, through the node exporter: CPU, memory and disk, matched to a store node by the machine label.

Every store series carries the labels ``cluster`` (the cluster's name, as observe names it) and ``node`` (the node's
name as observe names it: ``address:port``); the scrape configuration of role prometheus_server sets both.

PrometheusHistory keeps everything that is not a sample (configurations, transitions, saved state, and samples
observe still writes) in a SQL history beside it, the ``records`` store: the same history the other backends are.

Standard library only (urllib): the reader needs no client package.
"""

from __future__ import annotations

import json
import math
import ssl
import time as _time
import urllib.error
import urllib.parse
import urllib.request

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import samples as telemetry
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.operations import redis_operation

DEFAULT_STEP_S = telemetry.DEFAULT_T_D
DEFAULT_SPAN_S = 6 * 3600.0
"""How far back samples() reads when neither since nor last is given."""
MAX_POINTS = 10000
"""Points per series and query; Prometheus refuses more than 11,000. Longer spans are read in pieces."""
SYSTEM_KEYSPACES = "system|system_.*"
STORES = ("cassandra", "redis")
MACHINE_LABEL = "machine"


class PrometheusError(TelemetryError, ValueError):
    """A Prometheus server could not be read, or answered an error; the message names the server or the query."""


# ------------------------------------------------------------------------------------------------ the client
class PrometheusClient:
    """The HTTP API of one Prometheus server: instant and range queries, the targets. base_url: http(s)://host:port
    (and a path prefix). TLS: ca_file (the server's CA; default the system's), cert_file and key_file (a client
    certificate), validate_certs. opener: a urllib opener (tests)."""

    def __init__(
        self,
        base_url,
        ca_file=None,
        cert_file=None,
        key_file=None,
        validate_certs=True,
        timeout=30.0,
        opener=None,
    ):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PrometheusError("url: %r is not http(s)://host:port" % (base_url,))
        if parts.password:
            raise PrometheusError("url: a password in the URL would reach logs and arguments; leave it out")
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        if opener is None:
            handlers = []
            if parts.scheme == "https":
                context = ssl.create_default_context(cafile=ca_file)
                if cert_file:
                    context.load_cert_chain(cert_file, key_file)
                if not validate_certs:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                handlers.append(urllib.request.HTTPSHandler(context=context))
            opener = urllib.request.build_opener(*handlers)
        self.opener = opener

    def _get(self, path, params):
        url = "%s%s?%s" % (self.base_url, path, urllib.parse.urlencode(params))
        try:
            with self.opener.open(url, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                answer = json.loads(body.decode("utf-8"))
            except ValueError:
                raise PrometheusError("%s: HTTP %s on %s" % (self.base_url, exc.code, path)) from None
            raise PrometheusError(
                "%s: %s: %s (query %s)"
                % (self.base_url, answer.get("errorType", "error"), answer.get("error"), params.get("query"))
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusError("%s: cannot be reached: %s" % (self.base_url, getattr(exc, "reason", exc))) from None
        try:
            answer = json.loads(body.decode("utf-8"))
        except ValueError:
            raise PrometheusError("%s: %s did not answer JSON" % (self.base_url, path)) from None
        if answer.get("status") != "success":
            raise PrometheusError(
                "%s: %s: %s (query %s)"
                % (self.base_url, answer.get("errorType", "error"), answer.get("error"), params.get("query"))
            )
        return answer.get("data")

    def query(self, query, at=None):
        """[{"metric": labels, "value": (t, float)}] of an instant query at unix time at (default now)."""
        params = {"query": query}
        if at is not None:
            params["time"] = "%.3f" % at
        data = self._get("/api/v1/query", params)
        return [
            {"metric": row.get("metric", {}), "value": (float(row["value"][0]), _float(row["value"][1]))}
            for row in data.get("result", [])
        ]

    def query_range(self, query, start, end, step):
        """[{"metric": labels, "values": {t: float}}] of a range query from start to end every step seconds; spans of
        more than MAX_POINTS steps are read in pieces and joined."""
        series = {}
        piece = step * (MAX_POINTS - 1)
        at = start
        while at <= end + 1e-9:
            until = min(end, at + piece)
            data = self._get(
                "/api/v1/query_range",
                {"query": query, "start": "%.3f" % at, "end": "%.3f" % until, "step": "%.3f" % step},
            )
            for row in data.get("result", []):
                labels = row.get("metric", {})
                key = tuple(sorted(labels.items()))
                into = series.setdefault(key, {"metric": labels, "values": {}})
                for t, value in row.get("values", []):
                    into["values"][round(float(t), 3)] = _float(value)
            at = until + step
        return list(series.values())

    def targets(self):
        """The active targets: [{"labels", "health", "lastError", "scrapeUrl", "scrapeInterval"}]."""
        return self._get("/api/v1/targets", {"state": "active"}).get("activeTargets", [])

    def scrape_interval(self, cluster=None):
        """The longest scrape interval (seconds) of the active targets (of cluster's, when given), or None when the
        server does not say."""
        found = []
        for target in self.targets():
            if cluster is not None and (target.get("labels") or {}).get("cluster") != cluster:
                continue
            seconds = duration_seconds(target.get("scrapeInterval"))
            if seconds:
                found.append(seconds)
        return max(found) if found else None


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_seconds(text):
    """Seconds of a Prometheus duration such as 5s, 1m30s or 250ms; None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    total, number = 0.0, ""
    rest = text
    while rest:
        digits = len(rest) - len(rest.lstrip("0123456789."))
        number, rest = rest[:digits], rest[digits:]
        unit = "ms" if rest.startswith("ms") else rest[:1]
        if not number or unit not in _UNITS:
            return None
        total += float(number) * _UNITS[unit]
        rest = rest[len(unit) :]
    return total


URL_OPTIONS = ("records", "step", "rate_window", "ca_file", "cert_file", "key_file", "validate_certs", "timeout")
"""Options of a prometheus:// URL (records, step and rate_window are the history's)."""


def parse_url(url, field="url"):
    """(base http(s) URL, {option: value}) of ``prometheus://host:port[/prefix]?option=...``
    (``prometheus+https://`` for TLS; a plain http(s):// URL is taken too). Options: URL_OPTIONS, anything else is
    refused by name; errors start with field."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("prometheus", "prometheus+http", "prometheus+https", "http", "https"):
        raise PrometheusError("%s: %r is not prometheus://host:port (prometheus+https:// with TLS)" % (field, url))
    if not parts.hostname:
        raise PrometheusError("%s: %r names no host; write prometheus://host:port" % (field, url))
    if parts.password or parts.username:
        raise PrometheusError(
            "%s: a user or password in %s would reach logs and arguments; leave it out" % (field, scheme)
        )
    options = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key not in URL_OPTIONS:
            raise PrometheusError(
                "%s: option %r of %s:// is not known; allowed: %s" % (field, key, scheme, ", ".join(URL_OPTIONS))
            )
        options[key] = value
    for key in ("step", "rate_window", "timeout"):
        if key in options:
            try:
                options[key] = float(options[key])
            except ValueError:
                raise PrometheusError(
                    "%s: option %s=%r is not a number of seconds" % (field, key, options[key])
                ) from None
            if options[key] <= 0:
                raise PrometheusError("%s: option %s=%r must be above 0 seconds" % (field, key, options[key]))
    if "validate_certs" in options:
        flag = options["validate_certs"].lower()
        if flag not in ("true", "false", "1", "0", "yes", "no"):
            raise PrometheusError(
                "%s: option validate_certs=%r is not true or false" % (field, options["validate_certs"])
            )
        options["validate_certs"] = flag in ("true", "1", "yes")
    http = "https" if scheme.endswith("https") else "http"
    return urllib.parse.urlunsplit((http, parts.netloc, parts.path.rstrip("/"), "", "")), options


def client_from_url(url, field="url", opener=None):
    """A PrometheusClient for a prometheus:// (or http(s)://) URL and its TLS options."""
    base, options = parse_url(url, field)
    try:
        return PrometheusClient(
            base,
            ca_file=options.get("ca_file"),
            cert_file=options.get("cert_file"),
            key_file=options.get("key_file"),
            validate_certs=options.get("validate_certs", True),
            timeout=options.get("timeout", 30.0),
            opener=opener,
        )
    except (OSError, ValueError) as exc:
        raise PrometheusError("%s: %s" % (field, exc)) from None


def _float(text):
    value = float(text)
    return None if math.isnan(value) or math.isinf(value) else value


# ------------------------------------------------------------------------------------------------ the queries
def _selector(cluster, extra=""):
    labels = ['cluster="%s"' % _label(cluster)]
    if extra:
        labels.append(extra)
    return "{%s}" % ",".join(labels)


def _label(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"')


USER_TABLES = 'keyspace!~"%s"' % SYSTEM_KEYSPACES


def cassandra_queries(cluster, window):
    """{name: PromQL} of one Cassandra cluster, each giving series by ``node`` (and the label the name says)."""
    user = _selector(cluster, USER_TABLES)
    every = _selector(cluster)
    requests = "tactician_cassandra_coordinator_requests_total" + user
    return {
        "ops_by_op": "sum by (node, op) (rate(%s[%s]))" % (requests, window),
        "latency_us_by_op_quantile": (
            "max by (node, op, quantile) (tactician_cassandra_coordinator_latency_microseconds%s"
            " and on (node, keyspace, table, op) (rate(%s[%s]) > 0))" % (user, requests, window)
        ),
        "hits_by_cache": "sum by (node, cache) (rate(tactician_cassandra_cache_hits_total%s[%s]))" % (every, window),
        "requests_by_cache": (
            "sum by (node, cache) (rate(tactician_cassandra_cache_requests_total%s[%s]))" % (every, window)
        ),
        "fill_by_cache": (
            "max by (node, cache) (tactician_cassandra_cache_size_bytes%s)"
            " / max by (node, cache) (tactician_cassandra_cache_capacity_bytes%s > 0)" % (every, every)
        ),
        "data_bytes": "sum by (node) (tactician_cassandra_live_disk_bytes%s)" % user,
        "state.pending_compactions": (
            "max by (node) (max_over_time(tactician_cassandra_compaction_executor_pending_tasks%s[%s]))"
            % (every, window)
        ),
        "state.pending_compactions_estimated": "max by (node) (tactician_cassandra_pending_compactions%s)" % every,
        "state.pending_flushes": (
            "max by (node) (max_over_time(tactician_cassandra_pending_flushes%s[%s]))" % (every, window)
        ),
        "state.live_sstables": "sum by (node) (tactician_cassandra_live_sstables%s)" % user,
        "state.sstables_per_read": (
            "max by (node) (tactician_cassandra_sstables_per_read%s)"
            % _selector(cluster, USER_TABLES + ',quantile="0.5"')
        ),
        "state.sstables_per_read_max": (
            "max by (node) (tactician_cassandra_sstables_per_read%s)"
            % _selector(cluster, USER_TABLES + ',quantile="1"')
        ),
        "process_cpu": (
            "sum by (node) (rate(process_cpu_seconds_total%s[%s]))"
            " and on (node) tactician_cassandra_pending_flushes%s" % (every, window, every)
        ),
    }


def redis_queries(cluster, window):
    """{name: PromQL} of one Redis cluster, by ``node`` (and the label the name says)."""
    every = _selector(cluster)
    return {
        "calls_by_cmd": "sum by (node, cmd) (rate(redis_commands_total%s[%s]))" % (every, window),
        "keyspace_hits": "sum by (node) (rate(redis_keyspace_hits_total%s[%s]))" % (every, window),
        "keyspace_misses": "sum by (node) (rate(redis_keyspace_misses_total%s[%s]))" % (every, window),
        "role": "max by (node, role) (redis_instance_info%s)" % every,
        "data_bytes": "max by (node) (redis_memory_used_dataset_bytes%s)" % every,
        "memory_fill": (
            "max by (node) (redis_memory_used_bytes%s) / max by (node) (redis_memory_max_bytes%s > 0)" % (every, every)
        ),
        "state.evictions_per_s": "sum by (node) (rate(redis_evicted_keys_total%s[%s]))" % (every, window),
        "state.rdb_bgsave_in_progress": (
            "max by (node) (max_over_time(redis_rdb_bgsave_in_progress%s[%s]))" % (every, window)
        ),
        "state.aof_rewrite_in_progress": (
            "max by (node) (max_over_time(redis_aof_rewrite_in_progress%s[%s]))" % (every, window)
        ),
        "state.rdb_changes_since_last_save": (
            "max by (node) (max_over_time(redis_rdb_changes_since_last_save%s[%s]))" % (every, window)
        ),
        "state.mem_fragmentation_ratio": "max by (node) (redis_mem_fragmentation_ratio%s)" % every,
        "process_cpu": (
            "sum by (node) (rate(redis_cpu_sys_seconds_total%s[%s]) + rate(redis_cpu_user_seconds_total%s[%s]))"
            % (every, window, every, window)
        ),
    }


def machine_queries(window):
    """{name: PromQL} of the machines the node exporter reports, by ``machine``."""
    idle = 'avg by (machine) (rate(node_cpu_seconds_total{mode="%s"}[%s]))'
    return {
        "cpu_pct": "100 * (1 - %s)" % (idle % ("idle", window)),
        "cpu_user_pct": "100 * %s" % (idle % ("user", window)),
        "cpu_system_pct": "100 * %s" % (idle % ("system", window)),
        "cpu_iowait_pct": "100 * %s" % (idle % ("iowait", window)),
        "mem_bytes": "max by (machine) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)",
        "mem_pct": (
            "100 * max by (machine) ((node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes)"
            " / node_memory_MemTotal_bytes)"
        ),
        "disk_bytes": (
            'max by (machine) (node_filesystem_size_bytes{mountpoint="/"} - node_filesystem_free_bytes{mountpoint="/"})'
        ),
        "disk_pct": (
            'max by (machine) (100 * (node_filesystem_size_bytes{mountpoint="/"} - node_filesystem_free_bytes'
            '{mountpoint="/"}) / (node_filesystem_size_bytes{mountpoint="/"} - node_filesystem_free_bytes'
            '{mountpoint="/"} + node_filesystem_avail_bytes{mountpoint="/"}))'
        ),
    }


QUERIES = {"cassandra": cassandra_queries, "redis": redis_queries}


# ------------------------------------------------------------------------------------------------ samples
def grid(since, until, step):
    """The times of the steps in [since, until]: multiples of step, so that two readers of the same window meet on
    the same times."""
    first = math.ceil(since / step - 1e-9) * step
    last = math.floor(until / step + 1e-9) * step
    if last < first:
        return []
    return [round(first + k * step, 3) for k in range(int(round((last - first) / step)) + 1)]


def _index(rows, *labels):
    """{(label values...): {t: value}} of a query's rows."""
    out = {}
    for row in rows:
        key = tuple(row["metric"].get(label, "") for label in labels)
        out.setdefault(key, {}).update(row["values"])
    return out


class _Readings:
    """The answers of one window's queries: value(name, node, t, *more labels)."""

    def __init__(self, answers):
        self.answers = answers
        self.indexed = {}

    def by(self, name, *labels):
        key = (name, labels)
        if key not in self.indexed:
            self.indexed[key] = _index(self.answers.get(name, []), "node", *labels)
        return self.indexed[key]

    def nodes(self):
        found = set()
        for rows in self.answers.values():
            found.update(row["metric"].get("node") for row in rows if row["metric"].get("node"))
        return sorted(found)

    def value(self, name, node, t):
        """The value of name's series of node at t, or None."""
        return self.by(name).get((node,), {}).get(t)

    def labelled(self, name, label, node, t):
        """{label value: value} of the series of node at t."""
        out = {}
        for key, values in self.by(name, label).items():
            if key[0] == node and values.get(t) is not None:
                out[key[1]] = values[t]
        return out


def _cassandra_node(readings, node, t):
    ops_by = readings.labelled("ops_by_op", "op", node, t)
    ops = {"read": ops_by.get("read", 0.0), "update": ops_by.get("write", 0.0), "scan": ops_by.get("scan", 0.0)}
    latency = {}
    for key, values in readings.by("latency_us_by_op_quantile", "op", "quantile").items():
        if key[0] != node or values.get(t) is None:
            continue
        op = "update" if key[1] == "write" else key[1]
        point = {"0.5": "p50", "0.95": "p95", "0.99": "p99", "0.999": "p999"}.get(key[2])
        if point:
            latency.setdefault(op, {})[point] = values[t] / 1000.0
    hits = readings.labelled("hits_by_cache", "cache", node, t)
    requests = readings.labelled("requests_by_cache", "cache", node, t)
    counts = {}
    for cache in ("key", "row", "chunk"):
        counts[cache + "_cache"] = (hits.get(cache), requests.get(cache))
    fills = readings.labelled("fill_by_cache", "cache", node, t)
    state = {}
    for field in telemetry.STATE_FIELDS["cassandra"]:
        if field.endswith("_cache_fill"):
            value = fills.get(field[: -len("_cache_fill")])
        else:
            value = readings.value("state." + field, node, t)
        state[field] = None if value is None else _state_value("cassandra", field, value)
    return ops, latency, counts, readings.value("data_bytes", node, t), state, True


def _redis_node(readings, node, t):
    ops = dict.fromkeys(("read", "update", "scan", "delete", "other"), 0.0)
    for command, rate in readings.labelled("calls_by_cmd", "cmd", node, t).items():
        ops[redis_operation(command)] += rate
    hits, misses = readings.value("keyspace_hits", node, t), readings.value("keyspace_misses", node, t)
    counts = {"keyspace": (hits, None if hits is None or misses is None else hits + misses)}
    roles = readings.labelled("role", "role", node, t)
    counted = "master" in roles or not roles
    state = {}
    for field in telemetry.STATE_FIELDS["redis"]:
        value = readings.value("memory_fill" if field == "memory_fill" else "state." + field, node, t)
        state[field] = None if value is None else _state_value("redis", field, value)
    return ops, {}, counts, readings.value("data_bytes", node, t), state, counted


def _state_value(store, field, value):
    if telemetry.STATE_FIELDS[store][field].kind == "count":
        return int(round(value))
    return float(value)


NODE_READERS = {"cassandra": _cassandra_node, "redis": _redis_node}


def _ratio(pair):
    hits, requests = pair
    if hits is None or not requests:
        return None
    return min(max(hits / requests, 0.0), 1.0)


def _host(node):
    return node.rsplit(":", 1)[0] if ":" in node else node


class PrometheusSamples:
    """Samples of one store's cluster read from a Prometheus server (client: a PrometheusClient)."""

    def __init__(self, client, step_s=DEFAULT_STEP_S, rate_window_s=None, clock=_time.time):
        if not isinstance(step_s, (int, float)) or isinstance(step_s, bool) or step_s <= 0:
            raise PrometheusError("step: %r is not a number of seconds above 0" % (step_s,))
        self.client = client
        self.step = float(step_s)
        self.window = float(rate_window_s or step_s)
        self.clock = clock

    def read(self, store, cluster, since, until, exact=False):
        """Per-node and cluster samples of store's cluster at every step in [since, until], oldest first, the
        cluster's after its nodes'. A step no node has a series for is left out (the server was not scraped).
        exact: one sample, of the window of one step that ends at until (not on the grid)."""
        if store not in QUERIES:
            raise PrometheusError("store: %r cannot be read from Prometheus; allowed: %s" % (store, ", ".join(QUERIES)))
        times = [round(float(until), 3)] if exact else grid(since, until, self.step)
        if not times:
            return []
        window = "%dms" % max(1000, int(round(self.window * 1000)))
        answers = {
            name: self.client.query_range(query, times[0], times[-1], self.step)
            for name, query in QUERIES[store](cluster, window).items()
        }
        machines = {
            name: self.client.query_range(query, times[0], times[-1], self.step)
            for name, query in machine_queries(window).items()
        }
        readings = _Readings(answers)
        machine_index = {name: _index(rows, MACHINE_LABEL) for name, rows in machines.items()}
        nodes = readings.nodes()
        out = []
        for t in times:
            present = [n for n in nodes if readings.labelled(_presence(store), _presence_label(store), n, t)]
            if not present:
                continue
            node_samples, counted, counts_by_node = [], [], {}
            for node in present:
                ops, latency, counts, data_bytes, state, is_counted = NODE_READERS[store](readings, node, t)
                resources = _machine_resources(machine_index, _host(node), t)
                extra = {"source": "prometheus", "counted_in_aggregate": is_counted, "window_s": self.window}
                cpu = readings.value("process_cpu", node, t)
                if cpu is not None:
                    extra["process_cpu_pct"] = 100.0 * cpu
                sample = telemetry.new_sample(
                    store,
                    cluster,
                    node,
                    t,
                    self.step,
                    ops,
                    hit_ratio={name: _ratio(pair) for name, pair in counts.items()},
                    data_bytes=None if data_bytes is None else int(data_bytes),
                    latency_ms=latency,
                    resources=resources,
                    extra=extra,
                    state=state,
                )
                node_samples.append(sample)
                counts_by_node[node] = counts
                if is_counted:
                    counted.append(sample)
            out.extend(node_samples)
            out.append(_cluster_sample(store, cluster, t, self.step, node_samples, counted, counts_by_node))
        return out


def _presence(store):
    return {"cassandra": "ops_by_op", "redis": "calls_by_cmd"}[store]


def _presence_label(store):
    return {"cassandra": "op", "redis": "cmd"}[store]


def _machine_resources(index, host, t):
    resources = {}
    for name, series in index.items():
        machines = {key[0]: values for key, values in series.items()}
        values = machines.get(host)
        if values is None and len(machines) == 1:
            values = next(iter(machines.values()))
        value = None if values is None else values.get(t)
        resources[name] = None if value is None else (int(value) if name.endswith("_bytes") else float(value))
    return resources


def _cluster_sample(store, cluster, t, step, node_samples, counted, counts_by_node):
    hits = {}
    names = {name for counts in counts_by_node.values() for name in counts}
    for name in sorted(names):
        pairs = [counts.get(name, (None, None)) for counts in counts_by_node.values()]
        total_hits = sum(h for h, r in pairs if h is not None and r)
        total_requests = sum(r for h, r in pairs if h is not None and r)
        hits[name] = _ratio((total_hits, total_requests)) if total_requests else None
    return telemetry.cluster_sample(store, cluster, t, step, node_samples, counted, hits, {"source": "prometheus"})


# ------------------------------------------------------------------------------------------------ a roll's guards
SIGNAL_WINDOW_S = 60.0
"""The rate window of the client signals: one minute, as the coordinators' own one-minute rates."""


def signal_queries(store, cluster, window):
    """{name: PromQL} of the client-visible signals of a roll's guards (apply/guards.py), each by ``node``: the
    requests served, the errors the clients were answered, and the latency they saw (Cassandra: the coordinators'
    ClientRequest p99 of reads and writes, of the kinds served in the window; Redis: the mean time per command)."""
    every = _selector(cluster)
    if store == "cassandra":
        requests = "tactician_cassandra_client_requests_total" + every
        return {
            "ops": "sum by (node) (rate(%s[%s]))" % (requests, window),
            "errors": "sum by (node) (rate(tactician_cassandra_client_request_errors_total%s[%s]))" % (every, window),
            "p99_us": (
                "max by (node) (tactician_cassandra_client_request_latency_microseconds%s"
                " and on (node, op) (rate(%s[%s]) > 0))"
                % (_selector(cluster, 'op=~"read|write",quantile="0.99"'), requests, window)
            ),
        }
    if store == "redis":
        return {
            "ops": "sum by (node) (rate(redis_commands_total%s[%s]))" % (every, window),
            "seconds": "sum by (node) (rate(redis_commands_duration_seconds_total%s[%s]))" % (every, window),
            "failed": "sum by (node) (rate(redis_commands_failed_calls_total%s[%s]))" % (every, window),
            "rejected": "sum by (node) (rate(redis_commands_rejected_calls_total%s[%s]))" % (every, window),
            "redirected": (
                "sum by (node) (rate(redis_errors_total%s[%s]))" % (_selector(cluster, 'err=~"MOVED|ASK"'), window)
            ),
            "refused": "sum by (node) (rate(redis_rejected_connections_total%s[%s]))" % (every, window),
        }
    raise PrometheusError("store: %r has no client signals in Prometheus; allowed: cassandra, redis" % (store,))


def client_signals(client, store, cluster, nodes=None, window_s=SIGNAL_WINDOW_S, at=None):
    """{node: {"p99_ms", "ops_per_s", "errors_per_s", "via": "prometheus"}} of every node of the cluster that
    Prometheus scrapes (guards.combine takes it as the stores' own readings), or {node: {"error": text}} for a node
    of nodes (names as the series label them) with no series. A query Prometheus refuses raises PrometheusError."""
    window = "%dms" % max(1000, int(round(window_s * 1000)))
    answers = {name: client.query(query, at) for name, query in signal_queries(store, cluster, window).items()}
    values = {
        name: {row["metric"].get("node"): row["value"][1] for row in rows if row["metric"].get("node")}
        for name, rows in answers.items()
    }
    out = {}
    for node in sorted(set(values["ops"]) | set(nodes or ())):
        ops = values["ops"].get(node)
        if ops is None:
            out[node] = dict(error="no series of this node in Prometheus over the last %g s" % window_s)
            continue
        if store == "cassandra":
            p99 = values["p99_us"].get(node)
            errors = values["errors"].get(node)
            out[node] = dict(
                p99_ms=None if p99 is None else round(p99 / 1000.0, 3),
                ops_per_s=round(ops, 3),
                errors_per_s=None if errors is None else round(errors, 3),
                via="prometheus",
            )
        else:
            seconds = values["seconds"].get(node)
            parts = [values[name].get(node) for name in ("failed", "rejected", "refused")]
            known = [value for value in parts if value is not None]
            errors = None
            if known:
                errors = max(0.0, sum(known) - (values["redirected"].get(node) or 0.0))
            out[node] = dict(
                p99_ms=None if seconds is None or not ops else round(1000.0 * seconds / ops, 3),
                ops_per_s=round(ops, 3),
                errors_per_s=None if errors is None else round(errors, 3),
                via="prometheus",
            )
    return out
