# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What the simulation benchmarks share: forecasts of a trace's future (oracle, noisy oracle, a forecaster on the
history so far), the receding-horizon controller on any planner.Timeline, ratios, and the machine a run came from.

Plain Python and numpy (the forecaster is imported when one is asked for), so the unit tests call it directly.
"""

from __future__ import annotations

import datetime
import os
import platform
import random

HISTORY_STEPS = 500
"""Steps of history a forecaster is fitted on (IRIS: 500 samples)."""
MIN_HISTORY_STEPS = 20
"""Below this many steps of history a forecaster repeats the last value."""


# ------------------------------------------------------------------------------------------------ forecasts
def oracle(series):
    """predict(k, steps): the actual future of series from step k (the last value repeated past its end)."""

    def predict(k, steps):
        future = list(series[k : k + steps])
        if not future:
            future = [series[-1]]
        return future + [future[-1]] * (steps - len(future))

    return predict


def noisy_oracle(series, level, seed, low=0.0, high=1.0):
    """The actual future plus U(-level, level) on every step, clipped to [low, high] (IRIS Fig. 7's noise on the
    predicted workload). The noise of a step is drawn once, so every decision sees the same noisy future."""
    rng = random.Random("noisy-oracle/%s/%s" % (seed, level))
    noisy = [min(high, max(low, value + rng.uniform(-level, level))) for value in series]
    return oracle(noisy)


def forecaster(series, method="markov", step_s=30.0, history=HISTORY_STEPS):
    """predict(k, steps): the project's forecaster (forecast.forecast) fitted on the read ratios before step k."""
    from _common import use_collection

    use_collection()
    from ansible_collections.tactician.nosql.plugins.module_utils.models import forecast

    def predict(k, steps):
        past = list(series[max(0, k - history) : k])
        if len(past) < MIN_HISTORY_STEPS:
            return [past[-1] if past else series[0]] * steps
        result = forecast.forecast(
            {"t": [i * step_s for i in range(len(past))], "read_ratio": past, "step_s": step_s},
            steps,
            method=method,
        )
        return list(result["fields"]["read_ratio"])

    return predict


# ------------------------------------------------------------------------------------------------ control
def receding(line, rows_for, predict, lookahead, start, make_line, min_gain=0.0, tail_s=0.0, cache=None):
    """Our controller on the actual timeline line: at every step with no roll running, forecast the next lookahead
    steps (predict), plan them on the predicted rows (planner.best_plan on make_line(rows_for(future))) and start
    the plan's first switch when it is due now. Returns the switches started, [(step, configuration)].

    cache: a dict that keeps the predicted timeline of each step, for several runs with the same forecast (the same
    controller from another start); only for a predict that gives the same future for the same step."""
    from _common import use_collection

    use_collection()
    from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner

    _ops, resume = line.switch_ops()
    executed = []
    current, k = start, 0
    while k < line.steps:
        if cache is not None and k in cache:
            predicted = cache[k]
        else:
            predicted = make_line(rows_for(predict(k, lookahead)))
            if cache is not None:
                cache[k] = predicted
        plan = planner.best_plan(predicted, current, min_gain=min_gain, tail_s=tail_s)
        if plan["switches"] and plan["switches"][0][0] == 0:
            target = plan["switches"][0][2]
            executed.append((k, target))
            k = int(resume[k, current, target])
            current = target
        else:
            k += 1
    return executed


def in_place(switches, steps, start):
    """The configuration in place at each step of a plan of applied switches [(step, from, to)] or [(step, to)]."""
    out = []
    current = start
    pending = sorted((item[0], item[-1]) for item in switches)
    index = 0
    for k in range(steps):
        while index < len(pending) and pending[index][0] <= k:
            current = pending[index][1]
            index += 1
        out.append(current)
    return out


# ------------------------------------------------------------------------------------------------ numbers
def ratio(value, reference):
    """value / reference, None when the reference is 0."""
    return value / reference if reference else None


def gain(value, reference):
    """value over reference as a share (+0.10 = 10 % more), None when the reference is 0."""
    return value / reference - 1.0 if reference else None


def machine():
    """The machine a run came from, from /proc: CPU model and count, RAM, kernel, Python."""
    model, count = None, 0
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("processor"):
                    count += 1
                elif line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    memory_gb = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory_gb = int(line.split()[1]) / 1024.0 / 1024.0
                    break
    except OSError:
        pass
    load = None
    try:
        with open("/proc/loadavg", encoding="utf-8") as handle:
            load = " ".join(handle.read().split()[:3])
    except OSError:
        pass
    return {
        "cpu_model": model or platform.processor() or "unknown",
        "cpus": count or os.cpu_count() or 0,
        "memory_gb": round(memory_gb, 1) if memory_gb else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_at_start": load,
    }


def utc_stamp(moment=None):
    moment = moment or datetime.datetime.now(datetime.UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ")
