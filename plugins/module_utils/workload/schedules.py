# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Schedules of workload phases, to replay dynamic workloads and to compare forecasts against.

A Phase is (duration_s, mix {op: proportion}, rate ops/s [0 = unthrottled], optional label, optional
requestdistribution); a Schedule is the ordered phases plus the seed of the operation stream and free metadata.
Schedules load from and save to YAML (PyYAML's safe_load/safe_dump, as shipped with ansible-core) or JSON, and are
checked against SCHEDULE_SCHEMA (a JSON Schema, validated here by a small validator of our own so that nothing
beyond the standard library is needed on managed nodes). Errors name the field: "phases[2].rate: ...".

Generators (all seeded, same arguments -> same schedule):
- hpc_job_queue(): the synthetic HPC data-analytics queue of IRIS section 5.2;
- abrupt_switching(): read ratio jumping between 0 and 1 at random intervals (the MG-RAST pattern);
- daily_pattern(): the Bus-Tracking mix of OptimusCloud with a daily rate shape compressed to any duration.
expand() slices any schedule into fixed steps (default T_d = 30 s): the (time, mix, rate, read_ratio) series.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
from typing import NamedTuple

from ansible_collections.tactician.nosql.plugins.module_utils.core import imports
from ansible_collections.tactician.nosql.plugins.module_utils.core import schema as core_schema
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import WorkloadError
from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

yaml = imports.optional("yaml")  # PyYAML ships with ansible-core; JSON is the fallback

SCHEMA_VERSION = 1
DEFAULT_STEP_S = 30.0
"""T_d of IRIS: the workload is observed and forecast in 30 s steps."""

MIX_TOLERANCE = ycsb.PROPORTION_TOLERANCE


class ScheduleError(WorkloadError, ValueError):
    """A schedule or a generator argument is invalid. The message starts with the field's path."""


# ---------------------------------------------------------------------------------------------------------------
# Schema and validator
# ---------------------------------------------------------------------------------------------------------------

PHASE_SCHEMA = {
    "type": "object",
    "description": "One phase: a constant mix at a constant rate for duration_s seconds.",
    "required": ["duration_s", "mix"],
    "additionalProperties": False,
    "properties": {
        "duration_s": {"type": "number", "exclusiveMinimum": 0, "description": "Length of the phase in seconds."},
        "mix": {
            "type": "object",
            "description": "Client operation -> proportion in [0, 1]; the proportions sum to 1.",
            "minProperties": 1,
            "propertyNames": {"enum": list(ycsb.OPERATIONS)},
            "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "rate": {"type": "number", "minimum": 0, "description": "Target ops/s for the whole client; 0 = unthrottled."},
        "label": {"type": ["string", "null"], "description": "Free text shown in reports."},
        "requestdistribution": {
            "enum": [*ycsb.REQUEST_DISTRIBUTIONS, None],
            "description": "Key distribution for this phase; null keeps the driver's.",
        },
    },
}

SCHEDULE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tactician.nosql workload schedule",
    "type": "object",
    "required": ["version", "seed", "phases"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": SCHEMA_VERSION, "description": "Schema version of the file."},
        "seed": {"type": "integer", "minimum": 0, "description": "Seed of the operation stream when replayed."},
        "phases": {"type": "array", "minItems": 1, "items": PHASE_SCHEMA},
        "metadata": {"type": "object", "description": "Free data: generator, its arguments, jobs, ..."},
    },
}
"""JSON Schema of a schedule file. Also: each phase's mix must sum to 1 (within 1e-9)."""


def validate(data, schema, path=""):
    """Check data against a JSON Schema subset (core/schema.py); raise ScheduleError naming the first bad field."""
    core_schema.validate(data, schema, path, error=ScheduleError, document="schedule")


def _check_mix_sum(mix, where):
    total = math.fsum(mix.values())
    if abs(total - 1.0) > MIX_TOLERANCE:
        raise ScheduleError("%s: proportions sum to %r; they must sum to 1" % (where, round(total, 12)))


def validate_schedule(data):
    """Check a schedule given as plain data (as loaded from a file); raise ScheduleError naming the field."""
    validate(data, SCHEDULE_SCHEMA)
    for index, phase in enumerate(data["phases"]):
        _check_mix_sum(phase["mix"], "phases[%d].mix" % index)


# ---------------------------------------------------------------------------------------------------------------
# Phase and Schedule
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Phase:
    """duration_s seconds of a constant mix at rate ops/s (0 = unthrottled)."""

    duration_s: float
    mix: dict[str, float]
    rate: float = 0.0
    label: str | None = None
    requestdistribution: str | None = None

    def __post_init__(self):
        if isinstance(self.mix, dict):
            self.mix = {op: self.mix[op] for op in ycsb.OPERATIONS if op in self.mix} | {
                op: value for op, value in self.mix.items() if op not in ycsb.OPERATIONS
            }
        data = self.to_dict()
        validate(data, PHASE_SCHEMA)
        _check_mix_sum(data["mix"], "mix")
        self.duration_s = float(self.duration_s)
        self.rate = float(self.rate)
        self.mix = {op: float(value) for op, value in self.mix.items()}

    def to_dict(self):
        data = {"duration_s": self.duration_s, "mix": dict(self.mix), "rate": self.rate}
        if self.label is not None:
            data["label"] = self.label
        if self.requestdistribution is not None:
            data["requestdistribution"] = self.requestdistribution
        return data

    @property
    def read_ratio(self):
        """Server-side read ratio of the mix (see ycsb.read_ratio)."""
        return ycsb.read_ratio(self.mix)

    def workload(self, base=None):
        """The YCSB WorkloadSpec a driver runs for this phase: base with this mix, distribution and rate.

        operationcount is duration_s * rate for a throttled phase, else the base's.
        """
        base = base if base is not None else ycsb.WorkloadSpec()
        values = dataclasses.asdict(base)
        for op in ycsb.OPERATIONS:
            values["%sproportion" % op] = self.mix.get(op, 0.0)
        if self.requestdistribution is not None:
            values["requestdistribution"] = self.requestdistribution
        values["target"] = self.rate
        if self.rate > 0:
            values["operationcount"] = int(round(self.duration_s * self.rate))
        return ycsb.WorkloadSpec(**values)


@dataclasses.dataclass
class Schedule:
    """Ordered phases, the seed of the operation stream, and free metadata (generator, arguments, jobs)."""

    phases: list[Phase]
    seed: int = 0
    metadata: dict = dataclasses.field(default_factory=dict)
    version: int = SCHEMA_VERSION

    def __post_init__(self):
        self.phases = list(self.phases)
        validate_schedule(self.to_dict())
        self.phases = [phase if isinstance(phase, Phase) else Phase(**phase) for phase in self.phases]

    @property
    def duration_s(self):
        return math.fsum(phase.duration_s for phase in self.phases)

    def to_dict(self):
        data = {
            "version": self.version,
            "seed": self.seed,
            "phases": [p.to_dict() if isinstance(p, Phase) else p for p in self.phases],
        }
        if self.metadata:
            data["metadata"] = self.metadata
        return data

    @classmethod
    def from_dict(cls, data):
        """Build a Schedule from plain data, validating it first (errors name the field)."""
        validate_schedule(data)
        phases = [Phase(**phase) for phase in data["phases"]]
        return cls(phases=phases, seed=int(data["seed"]), metadata=dict(data.get("metadata") or {}))


# ---------------------------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------------------------

YAML_SUFFIXES = (".yml", ".yaml")


def _is_yaml(path, fmt):
    if fmt is not None:
        if fmt not in ("yaml", "json"):
            raise ScheduleError("format: %r is not allowed; choose one of yaml, json" % (fmt,))
        return fmt == "yaml"
    return os.path.splitext(str(path))[1].lower() in YAML_SUFFIXES


def dumps(schedule, fmt="yaml"):
    """The schedule as YAML (JSON when PyYAML is missing, which is valid YAML too) or JSON text."""
    data = schedule.to_dict() if isinstance(schedule, Schedule) else schedule
    if _is_yaml("", fmt) and yaml is not None:
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)
    return json.dumps(data, indent=2) + "\n"


def loads(text, fmt="yaml", source="schedule"):
    """Parse and validate schedule text; JSON text is accepted whatever fmt says."""
    try:
        data = json.loads(text)
    except ValueError:
        if not _is_yaml("", fmt):
            raise ScheduleError("schedule: %s is not valid JSON" % source) from None
        if yaml is None:
            raise ScheduleError("schedule: %s is not JSON and PyYAML is not installed to read YAML" % source) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScheduleError("schedule: %s is not valid YAML: %s" % (source, exc)) from None
    return Schedule.from_dict(data)


def save_schedule(schedule, path, fmt=None):
    """Write the schedule to path; fmt "yaml" or "json", default from the suffix (.yml/.yaml -> YAML)."""
    text = dumps(schedule, "yaml" if _is_yaml(path, fmt) else "json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def load_schedule(path, fmt=None):
    """Read and validate a schedule file; errors start with the field's path and end with the file name."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ScheduleError("schedule: cannot read %s: %s" % (path, exc.strerror or exc)) from None
    try:
        return loads(text, "yaml" if _is_yaml(path, fmt) else "json", source=os.path.basename(str(path)))
    except ScheduleError as exc:
        raise ScheduleError("%s (in %s)" % (exc, os.path.basename(str(path)))) from None


# ---------------------------------------------------------------------------------------------------------------
# Expansion into steps
# ---------------------------------------------------------------------------------------------------------------


class Step(NamedTuple):
    """One slice of a schedule: start time, blended mix, rate (ops/s, 0 = unthrottled), read ratio, length."""

    t: float
    mix: dict
    rate: float
    read_ratio: float
    duration_s: float


def blend(parts):
    """Weighted blend of mixes: parts = [(weight, mix)]. Returns the normalized mix in OPERATIONS order."""
    total = math.fsum(weight for weight, _mix in parts)
    if total <= 0:
        raise ScheduleError("mix: nothing to blend; give at least one part a weight > 0")
    result = {}
    for op in ycsb.OPERATIONS:
        value = math.fsum(weight * mix.get(op, 0.0) for weight, mix in parts) / total
        if value > 0:
            result[op] = value
    return result


def expand(schedule, step_s=DEFAULT_STEP_S):
    """The per-step series of a schedule: [Step(t, mix, rate, read_ratio, duration_s)].

    Step k covers [k*step_s, (k+1)*step_s); the last one ends with the schedule and may be shorter. A step that
    spans several phases gets the op-weighted blend of their mixes (weight = seconds * rate) and the time-averaged
    rate, i.e. what a monitor counting operations over the step would see. If any phase in the step is
    unthrottled (rate 0) the ops are unknown: the mix is time-weighted and the step's rate is 0.
    """
    if isinstance(schedule, dict):
        schedule = Schedule.from_dict(schedule)
    if isinstance(step_s, bool) or not isinstance(step_s, int | float) or step_s <= 0:
        raise ScheduleError("step_s: %r is not allowed; choose a number of seconds > 0" % (step_s,))
    bounds = []
    start = 0.0
    for phase in schedule.phases:
        bounds.append((start, start + phase.duration_s, phase))
        start += phase.duration_s
    total = start
    steps = []
    index = 0
    k = 0
    while True:
        a = k * step_s
        if a >= total - 1e-9:
            break
        b = min((k + 1) * step_s, total)
        parts = []
        while index < len(bounds) and bounds[index][1] <= a + 1e-12:
            index += 1
        j = index
        while j < len(bounds) and bounds[j][0] < b - 1e-12:
            p_start, p_end, phase = bounds[j]
            overlap = min(b, p_end) - max(a, p_start)
            if overlap > 1e-12:
                parts.append((overlap, phase))
            j += 1
        length = b - a
        if all(phase.rate > 0 for _overlap, phase in parts):
            mix = blend([(overlap * phase.rate, phase.mix) for overlap, phase in parts])
            rate = math.fsum(overlap * phase.rate for overlap, phase in parts) / length
        else:
            mix = blend([(overlap, phase.mix) for overlap, phase in parts])
            rate = 0.0
        steps.append(Step(a, mix, rate, ycsb.read_ratio(mix), length))
        k += 1
    return steps


# ---------------------------------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------------------------------


def _number(name, value, minimum=None, exclusive=None, maximum=None):
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScheduleError("%s: %r is not a number" % (name, value))
    if minimum is not None and value < minimum:
        raise ScheduleError("%s: %r is below the minimum; choose a value >= %s" % (name, value, minimum))
    if exclusive is not None and value <= exclusive:
        raise ScheduleError("%s: %r is too small; choose a value > %s" % (name, value, exclusive))
    if maximum is not None and value > maximum:
        raise ScheduleError("%s: %r is above the maximum; choose a value <= %s" % (name, value, maximum))
    return float(value)


def _integer(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError("%s: %r is not an integer" % (name, value))
    if value < minimum:
        raise ScheduleError("%s: %r is below the minimum; choose a value >= %d" % (name, value, minimum))
    return value


def _seed(seed):
    return _integer("seed", seed, 0)


def _distribution(value):
    if value is not None and value not in ycsb.REQUEST_DISTRIBUTIONS:
        raise ScheduleError(
            "requestdistribution: %r is not allowed; choose one of %s"
            % (value, core_schema.choices(ycsb.REQUEST_DISTRIBUTIONS))
        )
    return value


def _mix(name, mix):
    validate(mix, PHASE_SCHEMA["properties"]["mix"], name)
    _check_mix_sum(mix, name)
    return {op: float(mix[op]) for op in ycsb.OPERATIONS if op in mix}


HPC_PHASE_MIXES = {
    "upload": {"read": 0.05, "insert": 0.95},
    "analysis": {"read": 0.95, "update": 0.05},
    "commit": {"read": 0.05, "update": 0.45, "insert": 0.50},
}
"""Mixes of the HPC job phases. IRIS 5.2 says only "write-heavy" upload and commit and "read-heavy" analysis.

upload: new data arrives as new records (95 % insert) with a few reads (5 %) checking what is already there.
analysis: analytical queries read the data (95 % read) and annotate a few records (5 % update): YCSB B's mix.
commit: results go back as new records (50 % insert) and as updates of the analysed records (45 %), 5 % read.
So write-heavy phases have read ratio 0.05 and read-heavy ones 0.95, symmetric around 0.5.

With an equal mix of job types, 2 of every 5 phases are analysis, so the long-run read ratio is about 0.41. IRIS
reports most of its 10-job trace between 0.55 and 0.85, i.e. its phases were more read-heavy than these; pass
phase_mixes (and recurring_fraction) to hpc_job_queue() when a run should sit in that band.
"""

HPC_JOB_TYPES = {
    "full": ("upload", "analysis", "commit"),
    "recurring": ("analysis", "commit"),
}


def _round_time(value):
    return round(value, 3)


def hpc_job_queue(
    seed,
    concurrent_jobs=1,
    duration_s=3600.0,
    rate=1000.0,
    *,
    step_s=DEFAULT_STEP_S,
    min_phase_ops=200,
    max_phase_ops=100_000,
    recurring_fraction=0.5,
    phase_mixes=None,
    requestdistribution=None,
):
    """The synthetic HPC data-analytics queue of IRIS section 5.2 as a schedule of step_s-long phases.

    A job is "full" (upload -> analysis -> commit) or "recurring" (analysis -> commit, on data already uploaded);
    each job's type is drawn with P(recurring) = recurring_fraction (0.5: an equal mix). Each phase's size is
    ~ U(min_phase_ops, max_phase_ops) operations (IRIS: U(200, 100K)). concurrent_jobs jobs run at once (1, 5, 10
    in the paper; any int >= 1 works); when a job finishes the next one from the queue starts at once, so the
    count stays constant. rate is the aggregate ops/s, shared equally by the running jobs, so a job progresses at
    rate / concurrent_jobs ops/s. Each emitted phase is one step with the op-weighted blend of what the running
    jobs executed during it, at the aggregate rate. Mixes per job phase: HPC_PHASE_MIXES (or phase_mixes).

    metadata["jobs"] records every job (type, phase kinds, sizes, start and end times): the job queue a
    "perfect forecast" reads.
    """
    seed = _seed(seed)
    k = _integer("concurrent_jobs", concurrent_jobs, 1)
    duration_s = _number("duration_s", duration_s, exclusive=0)
    rate = _number("rate", rate, exclusive=0)
    step_s = _number("step_s", step_s, exclusive=0)
    min_ops = _integer("min_phase_ops", min_phase_ops, 1)
    max_ops = _integer("max_phase_ops", max_phase_ops, min_ops)
    recurring_fraction = _number("recurring_fraction", recurring_fraction, minimum=0, maximum=1)
    requestdistribution = _distribution(requestdistribution)
    mixes = {kind: dict(mix) for kind, mix in HPC_PHASE_MIXES.items()}
    for kind, mix in (phase_mixes or {}).items():
        if kind not in mixes:
            raise ScheduleError("phase_mixes: %r is not allowed; choose one of %s" % (kind, core_schema.choices(mixes)))
        mixes[kind] = _mix("phase_mixes.%s" % kind, mix)

    rng = random.Random(seed)
    share = rate / k
    jobs = []

    def new_job(start):
        job_type = "recurring" if rng.random() < recurring_fraction else "full"
        phases = [
            {"kind": kind, "ops": rng.randint(min_ops, max_ops), "start_s": None, "end_s": None}
            for kind in HPC_JOB_TYPES[job_type]
        ]
        phases[0]["start_s"] = _round_time(start)
        job = {"id": len(jobs), "type": job_type, "start_s": _round_time(start), "end_s": None, "phases": phases}
        jobs.append(job)
        return {"job": job, "phase": 0, "remaining": float(phases[0]["ops"])}

    running = [new_job(0.0) for _job in range(k)]
    out = []
    step = 0
    while True:
        a = step * step_s
        if a >= duration_s - 1e-9:
            break
        b = min((step + 1) * step_s, duration_s)
        counts = {}
        for state in running:
            kind = state["job"]["phases"][state["phase"]]["kind"]
            counts[kind] = counts.get(kind, 0) + 1
        label = "jobs=%d %s" % (k, " ".join("%s=%d" % (kind, counts[kind]) for kind in mixes if kind in counts))
        done = {}
        for slot, state in enumerate(running):
            budget = share * (b - a)
            now = a
            while budget > 1e-9:
                job = state["job"]
                phase = job["phases"][state["phase"]]
                take = min(budget, state["remaining"])
                done[phase["kind"]] = done.get(phase["kind"], 0.0) + take
                budget -= take
                state["remaining"] -= take
                now += take / share
                if state["remaining"] > 1e-9:
                    continue
                phase["end_s"] = _round_time(now)
                if state["phase"] + 1 < len(job["phases"]):
                    state["phase"] += 1
                    nxt = job["phases"][state["phase"]]
                    nxt["start_s"] = _round_time(now)
                    state["remaining"] = float(nxt["ops"])
                else:
                    job["end_s"] = _round_time(now)
                    state = running[slot] = new_job(now)
        mix = blend([(ops, mixes[kind]) for kind, ops in done.items()])
        out.append(Phase(b - a, mix, rate, label=label, requestdistribution=requestdistribution))
        step += 1
    metadata = {
        "generator": "hpc_job_queue",
        "arguments": {
            "concurrent_jobs": k,
            "duration_s": duration_s,
            "rate": rate,
            "step_s": step_s,
            "min_phase_ops": min_ops,
            "max_phase_ops": max_ops,
            "recurring_fraction": recurring_fraction,
            "requestdistribution": requestdistribution,
        },
        "phase_mixes": mixes,
        "jobs": jobs,
    }
    return Schedule(out, seed=seed, metadata=metadata)


READ_MIX = {"read": 1.0}
WRITE_MIX = {"insert": 1.0}


def abrupt_switching(
    seed,
    duration_s=3600.0,
    min_interval_s=30.0,
    max_interval_s=600.0,
    rate=1000.0,
    *,
    start=None,
    read_mix=None,
    write_mix=None,
    requestdistribution=None,
):
    """Read ratio jumping between 1 and 0 at random intervals ~ U(min_interval_s, max_interval_s), as MG-RAST does.

    Phases alternate read_mix (default 100 % read, read ratio 1) and write_mix (default 100 % insert: uploads,
    read ratio 0). start: "read", "write" or None (drawn from the seed). The last phase is cut at duration_s, so
    it may be shorter than min_interval_s; every other phase lasts within the bounds (rounded to 1 ms).
    """
    seed = _seed(seed)
    duration_s = _number("duration_s", duration_s, exclusive=0)
    low = _number("min_interval_s", min_interval_s, exclusive=0)
    high = _number("max_interval_s", max_interval_s, minimum=low)
    rate = _number("rate", rate, minimum=0)
    requestdistribution = _distribution(requestdistribution)
    if start not in (None, "read", "write"):
        raise ScheduleError("start: %r is not allowed; choose one of read, write, null" % (start,))
    mixes = {
        "read": _mix("read_mix", read_mix) if read_mix is not None else dict(READ_MIX),
        "write": _mix("write_mix", write_mix) if write_mix is not None else dict(WRITE_MIX),
    }
    if ycsb.read_ratio(mixes["read"]) != 1.0:
        raise ScheduleError("read_mix: %r has writes; choose only read and scan" % (mixes["read"],))
    if ycsb.read_ratio(mixes["write"]) != 0.0:
        raise ScheduleError("write_mix: %r has reads; choose only update, insert and delete" % (mixes["write"],))
    rng = random.Random(seed)
    state = start if start is not None else rng.choice(("read", "write"))
    phases = []
    elapsed = 0.0
    while elapsed < duration_s - 1e-9:
        length = min(max(round(rng.uniform(low, high), 3), low), high)
        length = min(length, duration_s - elapsed)
        phases.append(Phase(length, dict(mixes[state]), rate, label=state, requestdistribution=requestdistribution))
        elapsed += length
        state = "write" if state == "read" else "read"
    metadata = {
        "generator": "abrupt_switching",
        "arguments": {
            "duration_s": duration_s,
            "min_interval_s": low,
            "max_interval_s": high,
            "rate": rate,
            "start": start,
            "requestdistribution": requestdistribution,
        },
    }
    return Schedule(phases, seed=seed, metadata=metadata)


BUS_TRACKING_MIX = {"read": 0.0018, "update": 0.422, "insert": 0.0282, "scan": 0.548}
"""OptimusCloud's Bus-Tracking application: 42.2 % update, 54.8 % scan, 2.82 % insert, 0.18 % read."""

DAILY_PROFILE = (
    0.15, 0.10, 0.08, 0.08, 0.10, 0.20, 0.45, 0.80, 1.00, 0.85, 0.70, 0.70,
    0.75, 0.70, 0.70, 0.80, 0.95, 1.00, 0.85, 0.60, 0.45, 0.35, 0.25, 0.20,
)  # fmt: skip
"""Rate at each hour of the day as a fraction of the peak for shape="piecewise": quiet nights, a morning and
an evening rush (a bus service), linear between hours."""

DAILY_SHAPES = ("sine", "piecewise")


def daily_rate_fraction(hour, shape="sine", peak_hour=14.0, min_fraction=0.2):
    """Fraction of the peak rate at hour (0-24, wraps). sine: min_fraction at peak_hour +- 12 h, 1 at peak_hour."""
    hour = hour % 24.0
    if shape == "sine":
        return min_fraction + (1.0 - min_fraction) * (1.0 + math.cos(2.0 * math.pi * (hour - peak_hour) / 24.0)) / 2.0
    if shape == "piecewise":
        low = int(hour)
        frac = hour - low
        a = DAILY_PROFILE[low % 24]
        b = DAILY_PROFILE[(low + 1) % 24]
        return max(min_fraction, a + (b - a) * frac)
    raise ScheduleError("shape: %r is not allowed; choose one of %s" % (shape, core_schema.choices(DAILY_SHAPES)))


def daily_pattern(
    seed,
    duration_s=3600.0,
    rate=1000.0,
    *,
    day_s=None,
    step_s=DEFAULT_STEP_S,
    shape="sine",
    peak_hour=14.0,
    min_fraction=0.2,
    start_hour=0.0,
    noise=0.05,
    mix=None,
    requestdistribution=None,
):
    """A constant mix (default the Bus-Tracking one) whose rate follows a day, compressed to day_s seconds.

    day_s: length of one simulated day (default duration_s: the whole schedule is one day; 86400 for real time).
    rate: the peak ops/s. Every step_s phase runs at rate * daily_rate_fraction(hour at mid-step) * (1 + e) with
    e ~ U(-noise, noise) from the seed; the mix is exactly the same in every phase.
    """
    seed = _seed(seed)
    duration_s = _number("duration_s", duration_s, exclusive=0)
    rate = _number("rate", rate, exclusive=0)
    day_s = duration_s if day_s is None else _number("day_s", day_s, exclusive=0)
    step_s = _number("step_s", step_s, exclusive=0)
    if shape not in DAILY_SHAPES:
        raise ScheduleError("shape: %r is not allowed; choose one of %s" % (shape, core_schema.choices(DAILY_SHAPES)))
    peak_hour = _number("peak_hour", peak_hour, minimum=0, maximum=24)
    min_fraction = _number("min_fraction", min_fraction, exclusive=0, maximum=1)
    start_hour = _number("start_hour", start_hour, minimum=0, maximum=24)
    noise = _number("noise", noise, minimum=0)
    if noise >= 1:
        raise ScheduleError("noise: %r is too large; choose a value in [0, 1)" % (noise,))
    requestdistribution = _distribution(requestdistribution)
    mix = _mix("mix", mix) if mix is not None else dict(BUS_TRACKING_MIX)
    rng = random.Random(seed)
    phases = []
    step = 0
    while step * step_s < duration_s - 1e-9:
        a = step * step_s
        b = min((step + 1) * step_s, duration_s)
        hour = (start_hour + 24.0 * ((a + b) / 2.0) / day_s) % 24.0
        fraction = daily_rate_fraction(hour, shape, peak_hour, min_fraction)
        jitter = 1.0 + rng.uniform(-noise, noise) if noise else 1.0
        step_rate = max(round(rate * fraction * jitter, 3), 0.001)
        phases.append(
            Phase(b - a, dict(mix), step_rate, label="h%05.2f" % hour, requestdistribution=requestdistribution)
        )
        step += 1
    metadata = {
        "generator": "daily_pattern",
        "arguments": {
            "duration_s": duration_s,
            "rate": rate,
            "day_s": day_s,
            "step_s": step_s,
            "shape": shape,
            "peak_hour": peak_hour,
            "min_fraction": min_fraction,
            "start_hour": start_hour,
            "noise": noise,
            "requestdistribution": requestdistribution,
        },
    }
    return Schedule(phases, seed=seed, metadata=metadata)


# ------------------------------------------------------------------------------------------------ hard traces
TRACE_SHAPES = ("drift", "storms", "flapping", "daily", "mgrast")
"""Read-ratio traces made to be hard for a switching controller (trace_shape()):

- drift: the read ratio wanders slowly (a mean-reverting random walk, hours long) with step noise of +-0.08, so
  it keeps crossing the point where another configuration becomes better and tempts back-and-forth;
- storms: read-heavy (0.9) with write storms (0.1) of 1 to 12 minutes at random, about every 25 minutes: most
  storms end before a switch to a write configuration pays off;
- flapping: read-heavy and write-heavy alternate every 40 to 150 s, faster than a roll, with now and then a long
  stretch of one of them (10 to 40 minutes), so switching seems to pay off and mostly does not;
- daily: a day compressed to 2 hours: the read ratio follows a cycle between about 0.15 and 0.85 with step noise
  of +-0.1 and a random phase shift of up to 15 minutes per cycle;
- mgrast: MG-RAST-like switching between four mixes (read ratio 0.95, 0.65, 0.3, 0.05) with heavy-tailed phase
  lengths (log-normal, median 5 minutes, a few over an hour).
"""


def _ratio_mix(ratio):
    ratio = min(1.0, max(0.0, round(ratio, 4)))
    return {op: share for op, share in (("read", ratio), ("update", round(1.0 - ratio, 4))) if share > 0}


def _ratio_series(shape, rng, steps, step_s):
    """One read ratio per step of the shape (see TRACE_SHAPES)."""
    out = []
    if shape == "drift":
        level = rng.uniform(0.3, 0.7)
        for _k in range(steps):
            level += 0.02 * (0.5 - level) + rng.gauss(0.0, 0.025)
            level = min(0.98, max(0.02, level))
            out.append(level + rng.uniform(-0.08, 0.08))
    elif shape == "storms":
        k = 0
        while k < steps:
            calm = max(1, int(rng.expovariate(1.0 / (1500.0 / step_s))))
            out += [0.9 + rng.uniform(-0.04, 0.04) for _i in range(calm)]
            storm = max(1, int(rng.uniform(60.0, 720.0) / step_s))
            out += [0.1 + rng.uniform(-0.04, 0.04) for _i in range(storm)]
            k = len(out)
    elif shape == "flapping":
        state = rng.choice((0.9, 0.1))
        seconds = 0.0
        while len(out) < steps:
            length = rng.uniform(600.0, 2400.0) if rng.random() < 0.08 else rng.uniform(40.0, 150.0)
            until = seconds + length
            while len(out) * step_s < until and len(out) < steps:
                # a step that straddles a flip carries the blend of both
                a, b = len(out) * step_s, (len(out) + 1) * step_s
                inside = (min(b, until) - max(a, seconds)) / step_s
                other = 1.0 - state
                out.append(inside * state + (1.0 - inside) * other if b > until else state)
            seconds = until
            state = 1.0 - state
    elif shape == "daily":
        cycle_s = 7200.0
        shift = rng.uniform(-900.0, 900.0)
        for k in range(steps):
            t = k * step_s
            if int(t // cycle_s) != int((t - step_s) // cycle_s) and k:
                shift = rng.uniform(-900.0, 900.0)
            base = 0.5 + 0.35 * math.sin(2.0 * math.pi * (t + shift) / cycle_s)
            out.append(base + rng.uniform(-0.1, 0.1))
    elif shape == "mgrast":
        levels = (0.95, 0.65, 0.3, 0.05)
        state = rng.choice(levels)
        while len(out) < steps:
            length = min(4 * 3600.0, rng.lognormvariate(math.log(300.0), 1.1))
            out += [state + rng.uniform(-0.03, 0.03) for _i in range(max(1, int(round(length / step_s))))]
            state = rng.choice([level for level in levels if level != state])
    else:
        raise ScheduleError("shape: %r is not allowed; choose one of %s" % (shape, core_schema.choices(TRACE_SHAPES)))
    return [min(1.0, max(0.0, value)) for value in out[:steps]]


def trace_shape(shape, seed, duration_s=3600.0, rate=1000.0, *, step_s=DEFAULT_STEP_S, requestdistribution=None):
    """A trace of one of TRACE_SHAPES as a schedule of step_s-long phases of reads and updates at rate ops/s.

    The same (shape, seed, duration_s, step_s) always gives the same trace; each phase's label is the shape."""
    seed = _seed(seed)
    duration_s = _number("duration_s", duration_s, exclusive=0)
    rate = _number("rate", rate, minimum=0)
    step_s = _number("step_s", step_s, exclusive=0)
    requestdistribution = _distribution(requestdistribution)
    if shape not in TRACE_SHAPES:
        raise ScheduleError("shape: %r is not allowed; choose one of %s" % (shape, core_schema.choices(TRACE_SHAPES)))
    rng = random.Random("%s/%d" % (shape, seed))
    steps = max(1, int(math.ceil(duration_s / step_s - 1e-9)))
    phases = []
    for k, ratio in enumerate(_ratio_series(shape, rng, steps, step_s)):
        length = min(step_s, duration_s - k * step_s)
        phases.append(Phase(length, _ratio_mix(ratio), rate, label=shape, requestdistribution=requestdistribution))
    metadata = {
        "generator": "trace_shape",
        "arguments": {
            "shape": shape,
            "duration_s": duration_s,
            "rate": rate,
            "step_s": step_s,
            "requestdistribution": requestdistribution,
        },
    }
    return Schedule(phases, seed=seed, metadata=metadata)
