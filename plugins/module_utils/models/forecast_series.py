# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The workload vector on a regular T_d grid, the input of every forecaster.

The workload W(t) of IRIS (seed 001, section 4.1) is a vector of features observed every T_d = 30 s. Here it is
WORKLOAD_FIELDS: the read ratio, the total operations per second, and the share of each operation in the mix.
``series_from_samples`` puts observed workload samples (tactician.workload_sample/v1) on that grid and
``series_from_schedule`` does the same for a schedule (a replayed workload, or a job queue whose future is known).
The samples' observed state can join the vector on request (STATE_SERIES_FIELDS: the compaction backlog and the
SSTables per read that a configuration leaves behind), so models can take it as a feature or forecast it.

Standard library only. Errors are ForecastError (a ValueError) whose message starts with the field at fault and,
for a choice, lists the allowed values; the checks that word them are shared by the forecasters.
"""

from __future__ import annotations

import math

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import OPS, READ_OPS, WRITE_OPS
from ansible_collections.tactician.nosql.plugins.module_utils.workload import schedules, ycsb

SHARE_FIELDS = ("read", "update", "insert", "scan", "delete")
WORKLOAD_FIELDS = ("read_ratio", "throughput", *SHARE_FIELDS)
"""The workload vector: read ratio, total ops/s, and each operation's share of the total (ops_per_s / throughput)."""

STATE_SERIES_FIELDS = ("pending_compactions", "sstables_per_read")
"""Fields of a sample's ``state`` a series can carry (samples.STATE_FIELDS; from series_from_samples only, when
asked for in fields: a schedule knows no state)."""
SERIES_FIELDS = WORKLOAD_FIELDS + STATE_SERIES_FIELDS
"""Every field a series may carry."""

RATIO_FIELDS = ("read_ratio", *SHARE_FIELDS)
FIELD_BOUNDS = (
    dict.fromkeys(RATIO_FIELDS, (0.0, 1.0))
    | {"throughput": (0.0, None)}
    | dict.fromkeys(STATE_SERIES_FIELDS, (0.0, None))
)
"""Valid range of every field: forecasts are clipped to it (None = unbounded)."""

AGE = "age_steps"
"""The key of a workload state's age (error_paths' states and now): the steps its read ratio had stayed within
AGE_RADIUS of its level."""
AGE_RADIUS = 0.15


def regime_age(values, radius=AGE_RADIUS):
    """The steps the last of values has stayed within radius of its level: 0 when the one before differs by more
    (a regime that just began)."""
    if not len(values):
        return 0
    level = float(values[-1])
    age = 0
    for value in reversed(values[:-1]):
        if abs(float(value) - level) > radius + 1e-9:
            break
        age += 1
    return age


DEFAULT_STEP_S = 30.0


class ForecastError(ModelError, ValueError):
    """Bad input to a forecast. The message starts with the field at fault (and lists allowed values for a choice)."""


def _is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_finite(name, value):
    if not _is_number(value) or not math.isfinite(value):
        raise ForecastError("%s: %r is not a finite number" % (name, value))
    return float(value)


def check_integer(name, value, minimum, maximum=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ForecastError("%s: %r is not an integer" % (name, value))
    if value < minimum:
        raise ForecastError("%s: %r is below the minimum; choose a value >= %d" % (name, value, minimum))
    if maximum is not None and value > maximum:
        raise ForecastError("%s: %r is above the maximum; choose a value <= %d" % (name, value, maximum))
    return value


def check_positive(name, value):
    value = check_finite(name, value)
    if value <= 0:
        raise ForecastError("%s: %r is not allowed; choose a number > 0" % (name, value))
    return value


def check_choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ForecastError("%s: %r is not allowed; choose one of %s" % (name, value, ", ".join(allowed)))
    return value


def check_values(values, name="values", minimum=1):
    if isinstance(values, str | bytes | dict) or not hasattr(values, "__iter__"):
        raise ForecastError("%s: %r is not a list of numbers" % (name, values))
    out = [check_finite("%s[%d]" % (name, index), value) for index, value in enumerate(values)]
    if len(out) < minimum:
        raise ForecastError("%s: needs at least %d value(s), got %d" % (name, minimum, len(out)))
    return out


def check_bounds(bounds):
    if bounds is None:
        return (None, None)
    if isinstance(bounds, str | bytes | dict) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ForecastError("bounds: %r is not allowed; give (low, high) with None for no limit" % (bounds,))
    low, high = (None if value is None else check_finite("bounds", value) for value in bounds)
    if low is not None and high is not None and low > high:
        raise ForecastError("bounds: low %r is above high %r" % (low, high))
    return (low, high)


def clip(value, bounds):
    low, high = bounds
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


def check_fields(fields, allowed=WORKLOAD_FIELDS, name="fields"):
    if isinstance(fields, str):
        fields = (fields,)
    if fields is None or not hasattr(fields, "__iter__"):
        raise ForecastError("%s: %r is not a list of fields; choose from %s" % (name, fields, ", ".join(allowed)))
    fields = tuple(fields)
    if not fields:
        raise ForecastError("%s: is empty; choose from %s" % (name, ", ".join(allowed)))
    for field in fields:
        check_choice(name, field, allowed)
    return fields


def _vector(ops):
    """The workload vector of averaged ops/s: read ratio (None when idle), throughput, each op's share."""
    throughput = math.fsum(ops[op] for op in OPS)
    reads = math.fsum(ops[op] for op in READ_OPS)
    writes = math.fsum(ops[op] for op in WRITE_OPS)
    row = {
        "read_ratio": reads / (reads + writes) if reads + writes > 0 else None,
        "throughput": throughput,
    }
    for op in SHARE_FIELDS:
        row[op] = ops[op] / throughput if throughput > 0 else None
    return row


def _check_sample(index, sample, state_fields=()):
    where = "samples[%d]" % index
    if not isinstance(sample, dict):
        raise ForecastError("%s: %r is not a workload sample (a mapping)" % (where, sample))
    for key in ("time", "window_s", "ops_per_s"):
        if key not in sample:
            raise ForecastError("%s.%s: is required" % (where, key))
    time = check_finite(where + ".time", sample["time"])
    window = check_positive(where + ".window_s", sample["window_s"])
    ops = sample["ops_per_s"]
    if not isinstance(ops, dict):
        raise ForecastError("%s.ops_per_s: %r is not a mapping of operation to ops/s" % (where, ops))
    rates = {}
    for op in OPS:
        rate = check_finite("%s.ops_per_s.%s" % (where, op), ops.get(op, 0.0))
        if rate < 0:
            raise ForecastError("%s.ops_per_s.%s: %r is below 0" % (where, op, rate))
        rates[op] = rate
    state = sample.get("state") or {}
    if not isinstance(state, dict):
        raise ForecastError("%s.state: %r is not a mapping of state field to value" % (where, state))
    values = {}
    for field in state_fields:
        value = state.get(field)
        if value is not None:
            value = check_finite("%s.state.%s" % (where, field), value)
            if value < 0:
                raise ForecastError("%s.state.%s: %r is below 0" % (where, field, value))
        values[field] = value
    return time, window, rates, values


def _state_columns(buckets, last_index, state_fields):
    """Per state field, its value in every step: the window-weighted mean of the samples of the step that give
    one; a step without one takes the previous step's value, the steps before the first value take that first
    value. Returns (columns, {field: steps filled})."""
    columns, filled = {}, {}
    for field in state_fields:
        raw = []
        for index in range(last_index + 1):
            weight, total = 0.0, 0.0
            for span, values in buckets.get(index, ()):
                if values[field] is not None:
                    weight += span
                    total += span * values[field]
            raw.append(total / weight if weight > 0 else None)
        known = [value for value in raw if value is not None]
        if not known:
            raise ForecastError(
                "fields: %s is in no sample's state; observe it first (Cassandra gives it, see docs/observe.md)"
                " or leave it out" % field
            )
        previous = known[0]
        filled[field] = 0
        column = []
        for value in raw:
            if value is None:
                filled[field] += 1
                value = previous
            column.append(value)
            previous = value
        columns[field] = column
    return columns, filled


def series_from_samples(samples, step_s=DEFAULT_STEP_S, fields=WORKLOAD_FIELDS):
    """Put workload samples on a regular grid of step_s (T_d) seconds: {"t", field: [...], "step_s", "filled"}
    (and "filled_state" with a state field).

    samples: workload sample dicts (telemetry schema v1) in any order, of whatever node the caller picked (pass
    the aggregate node "cluster" for the cluster's workload; samples of several nodes would be averaged). A sample
    covers [time - window_s, time]; it belongs to the step holding the middle of its window (of its last step_s
    seconds when the window is longer than a step), which tolerates clock jitter of up to half a step. The grid
    starts where the earliest sample does; t[k] is the start of step k, which covers [t[k], t[k] + step_s).

    Samples in the same step are averaged, weighted by their window (ops/s averaged over time); the vector is
    then computed from the averaged rates: throughput = sum of ops/s, share of op = ops_per_s[op] / throughput,
    read_ratio = (read + scan) / (read + scan + update + insert + delete), as in the sample itself. A step with no
    sample takes the previous step's values and is counted in "filled". An idle step keeps throughput 0 and takes
    the previous read ratio and shares (0 when the series starts idle).

    A state field (STATE_SERIES_FIELDS, bounds >= 0) is the window-weighted mean of the step's samples that give
    it (state.<field> not null); a step without one takes the previous step's value, and the steps before its first
    value take that first value; "filled_state" counts those steps per field. A state field no sample gives is an
    error: a series of guesses would teach a model nothing.
    """
    step_s = check_positive("step_s", step_s)
    fields = check_fields(fields, SERIES_FIELDS)
    state_fields = tuple(field for field in fields if field in STATE_SERIES_FIELDS)
    if isinstance(samples, str | bytes | dict) or not hasattr(samples, "__iter__"):
        raise ForecastError("samples: %r is not a list of workload samples" % (samples,))
    checked = [_check_sample(index, sample, state_fields) for index, sample in enumerate(samples)]
    if not checked:
        raise ForecastError("samples: is empty; give at least one workload sample")
    checked = [(time, min(window, step_s), rates, state) for time, window, rates, state in checked]
    origin = min(time - span for time, span, _rates, _state in checked)
    buckets = {}
    states = {}
    for time, span, rates, state in checked:
        index = int(math.floor((time - span / 2.0 - origin) / step_s + 1e-9))
        weight, sums = buckets.get(index, (0.0, dict.fromkeys(OPS, 0.0)))
        buckets[index] = (weight + span, {op: sums[op] + span * rates[op] for op in OPS})
        states.setdefault(index, []).append((span, state))
    last_index = max(buckets)
    state_columns, state_filled = _state_columns(states, last_index, state_fields)
    series = {"t": []} | {field: [] for field in fields}
    previous = dict.fromkeys(WORKLOAD_FIELDS, 0.0)
    filled = 0
    for index in range(last_index + 1):
        if index in buckets:
            weight, sums = buckets[index]
            row = _vector({op: sums[op] / weight for op in OPS})
            row = {field: previous[field] if value is None else value for field, value in row.items()}
        else:
            row = dict(previous)
            filled += 1
        series["t"].append(origin + index * step_s)
        for field in fields:
            series[field].append(state_columns[field][index] if field in state_columns else row[field])
        previous = row
    series["step_s"] = step_s
    series["filled"] = filled
    if state_fields:
        series["filled_state"] = state_filled
    return series


def series_from_schedule(schedule, step_s=DEFAULT_STEP_S, fields=WORKLOAD_FIELDS):
    """The workload vector of a schedule (Schedule, its dict, or a schedule file path) per step of step_s seconds.

    Same shape as series_from_samples (t = seconds from the schedule's start, "filled" = 0), from
    schedules.expand(), counted as a monitor on the servers would count: a readmodifywrite is one read and one
    update, so throughput = rate x server operations per client operation (= rate for every other mix) and the
    shares are those of server operations. An unthrottled step (rate 0) has throughput 0: its rate is unknown.
    """
    step_s = check_positive("step_s", step_s)
    fields = check_fields(fields, SERIES_FIELDS)
    observed_only = [field for field in fields if field in STATE_SERIES_FIELDS]
    if observed_only:
        raise ForecastError(
            "fields: %s is observed state, which a schedule does not give; choose from %s"
            % (", ".join(observed_only), ", ".join(WORKLOAD_FIELDS))
        )
    if isinstance(schedule, str) or hasattr(schedule, "__fspath__"):
        schedule = schedules.load_schedule(schedule)
    series = {"t": []} | {field: [] for field in fields}
    for step in schedules.expand(schedule, step_s):
        reads, writes = ycsb.server_operations(step.mix)
        total = reads + writes
        rmw = step.mix.get("readmodifywrite", 0.0)
        server = {op: step.mix.get(op, 0.0) for op in SHARE_FIELDS}
        server["read"] += rmw
        server["update"] += rmw
        row = {"read_ratio": step.read_ratio, "throughput": step.rate * total}
        row.update({op: server[op] / total for op in SHARE_FIELDS})
        series["t"].append(step.t)
        for field in fields:
            series[field].append(row[field])
    series["step_s"] = step_s
    series["filled"] = 0
    return series


def series_field(series, field, name="series"):
    if not isinstance(series, dict):
        raise ForecastError("%s: %r is not a series (a mapping with t and field lists)" % (name, series))
    if field not in series:
        present = [f for f in SERIES_FIELDS if f in series]
        raise ForecastError(
            "%s.%s: not in the series; choose one of %s" % (name, field, ", ".join(present) or "(no field)")
        )
    return check_values(series[field], "%s.%s" % (name, field))


def series_step(series, name="series"):
    if "step_s" in series:
        return check_positive("%s.step_s" % name, series["step_s"])
    times = series.get("t") or []
    if len(times) >= 2:
        return check_positive("%s.t" % name, float(times[1]) - float(times[0]))
    return DEFAULT_STEP_S
